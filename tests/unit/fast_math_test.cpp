// kernels/fast_math.h: the vectorisable exp and tanh against the C library in double.
#include "kernels/fast_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace lmforge::kernels {
namespace {

TEST(FastMath, ExpIsWithinFourUlpOverTheNormalRange) {
    double worst = 0.0;
    for (float x = -87.0f; x <= 88.0f; x += 0.001f) {
        const double want = std::exp(static_cast<double>(x));
        const double rel = std::abs(fast_exp(x) - want) / want;
        worst = std::max(worst, rel);
    }
    EXPECT_LT(worst, 4 * std::numeric_limits<float>::epsilon()) << "worst relative error";
}

TEST(FastMath, ExpLimits) {
    EXPECT_EQ(fast_exp(0.0f), 1.0f);
    EXPECT_EQ(fast_exp(-std::numeric_limits<float>::infinity()), 0.0f);
    EXPECT_EQ(fast_exp(-100.0f), 0.0f);
    EXPECT_EQ(fast_exp(100.0f), std::numeric_limits<float>::infinity());
}

TEST(FastMath, TanhIsWithinOneMillionthAndSaturates) {
    double worst = 0.0;
    for (float u = -12.0f; u <= 12.0f; u += 0.0005f) {
        worst = std::max(worst, std::abs(fast_tanh(u) - std::tanh(static_cast<double>(u))));
    }
    EXPECT_LT(worst, 1e-6);
    EXPECT_EQ(fast_tanh(0.0f), 0.0f);
    EXPECT_EQ(fast_tanh(50.0f), 1.0f);
    EXPECT_EQ(fast_tanh(-50.0f), -1.0f);
}

}  // namespace
}  // namespace lmforge::kernels
