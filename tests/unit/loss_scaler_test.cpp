// Dynamic loss scaling's semantics: an overflow halves the scale and skips the step; the
// growth interval's clean steps in a row double it; a skip restarts the count.
#include "optim/loss_scaler.h"

#include <gtest/gtest.h>

namespace lmforge {
namespace {

TEST(LossScaler, HalvesOnOverflowAndDoublesAfterTheIntervalOfCleanSteps) {
    LossScaler s;
    EXPECT_EQ(s.scale, 65536.0);
    EXPECT_EQ(s.growth_interval, 2000);
    EXPECT_FALSE(s.after_step(false));
    EXPECT_EQ(s.scale, 32768.0);
    EXPECT_EQ(s.skipped_steps, 1);
    for (int i = 0; i < 1999; i++) EXPECT_TRUE(s.after_step(true));
    EXPECT_EQ(s.scale, 32768.0);
    EXPECT_EQ(s.clean_steps, 1999);
    EXPECT_FALSE(s.after_step(false));  // one short of growing: back to counting from zero
    EXPECT_EQ(s.scale, 16384.0);
    EXPECT_EQ(s.clean_steps, 0);
    for (int i = 0; i < 2000; i++) s.after_step(true);
    EXPECT_EQ(s.scale, 32768.0);
    EXPECT_EQ(s.clean_steps, 0);
    EXPECT_EQ(s.skipped_steps, 2);
}

}  // namespace
}  // namespace lmforge
