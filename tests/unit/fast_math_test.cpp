// kernels/fast_math.h: the vectorisable exp and tanh against the C library in double.
#include "kernels/fast_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

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

// The softmax's exp, without the test for overflow: fast_exp's value wherever x <= 0, from a
// loop the compiler vectorises as the kernels' are.
TEST(FastMath, ExpOfNonPositiveIsFastExp) {
    std::vector<float> x;
    for (float v = -90.0f; v <= 0.0f; v += 0.0007f) x.push_back(v);
    x.push_back(0.0f);
    x.push_back(-std::numeric_limits<float>::infinity());
    std::vector<float> got(x.size());
#pragma omp simd
    for (size_t i = 0; i < x.size(); i++) got[i] = fast_exp_nonpositive(x[i]);
    for (size_t i = 0; i < x.size(); i++) ASSERT_EQ(got[i], fast_exp(x[i])) << "at x = " << x[i];
    EXPECT_EQ(fast_exp_nonpositive(0.0f), 1.0f);
    EXPECT_EQ(fast_exp_nonpositive(-100.0f), 0.0f);
    EXPECT_TRUE(std::isnan(fast_exp_nonpositive(std::numeric_limits<float>::quiet_NaN())));
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
