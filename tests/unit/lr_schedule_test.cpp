// optim/lr_schedule: warm-up, then cosine, linear or constant to the floor.
#include "optim/lr_schedule.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace lmforge {
namespace {

TEST(LrSchedule, WarmupThenCosineToTheFloor) {
    const LrSchedule s{LrSchedule::Kind::Cosine, 1.0, 0.1, 10, 110};
    EXPECT_DOUBLE_EQ(s.at(0), 0.1);  // (0 + 1) / 10
    EXPECT_DOUBLE_EQ(s.at(9), 1.0);
    EXPECT_DOUBLE_EQ(s.at(10), 1.0);               // the peak, as decay starts
    EXPECT_NEAR(s.at(10 + 99 / 2.0), 0.55, 0.01);  // halfway: midway between peak and floor
    EXPECT_DOUBLE_EQ(s.at(109), 0.1);              // the last step sits on the floor
    for (int64_t t = 11; t < 110; t++) EXPECT_LT(s.at(t), s.at(t - 1));
}

TEST(LrSchedule, LinearAndConstant) {
    const LrSchedule lin{LrSchedule::Kind::Linear, 2.0, 0.0, 0, 11};
    EXPECT_DOUBLE_EQ(lin.at(0), 2.0);
    EXPECT_DOUBLE_EQ(lin.at(5), 1.0);
    EXPECT_DOUBLE_EQ(lin.at(10), 0.0);
    const LrSchedule c{LrSchedule::Kind::Constant, 3.0, 0.1, 4, 100};
    EXPECT_DOUBLE_EQ(c.at(1), 1.5);
    EXPECT_DOUBLE_EQ(c.at(50), 3.0);
    EXPECT_THROW(LrSchedule::parse_kind("step"), InputError);
}

}  // namespace
}  // namespace lmforge
