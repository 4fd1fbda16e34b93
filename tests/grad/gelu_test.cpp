// GELU (tanh and exact erf forms): finite differences on the twins; kernels against twins.
#include "kernels/gelu.h"

#include <cmath>
#include <limits>
#include <utility>

#include "gradcheck.h"
#include "kernels/matmul.h"
#include "kernels/ref/gelu.h"

namespace lmforge::test {
namespace {

TEST(GeluGrad, FiniteDifferences) {
    const int64_t n = 23;
    auto x = random_vector<double>(n, 1, 3.0f);
    const auto dout = random_vector<double>(n, 2);
    std::vector<double> dx(n);
    kernels::ref::gelu_backward(dx.data(), dout.data(), x.data(), n);
    const auto loss = [&] {
        std::vector<double> out(n);
        kernels::ref::gelu_forward(out.data(), x.data(), n);
        return dot(out, dout);
    };
    expect_matches_finite_differences({{"inp", &x, &dx}}, loss);
}

TEST(GeluTwin, KernelMatchesTwinOnRemainderShapes) {
    for (const int64_t n : {1, 15, 17, 1000, 4099}) {
        auto x = random_vector(n, 3, 4.0f);
        x[0] = -12.0f;  // far tails: gelu -> 0 and -> x
        if (n > 1) x[1] = 12.0f;
        const auto dout = random_vector(n, 4);
        std::vector<float> out(n);
        std::vector<double> out_r(n);
        kernels::gelu_forward(out.data(), x.data(), n);
        kernels::ref::gelu_forward(out_r.data(), convert<double>(x).data(), n);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << "n=" << n;
        auto dx = std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());  // must be overwritten
        auto dx_r = convert<double>(dx);
        kernels::gelu_backward(dx.data(), dout.data(), x.data(), n);
        kernels::ref::gelu_backward(dx_r.data(), convert<double>(dout).data(),
                                    convert<double>(x).data(), n);
        EXPECT_TRUE(close(dx, dx_r, kTwinRtol, kTwinAtol)) << "n=" << n;
    }
}

// The left tail is small, not zero: the output and the gradient keep their relative accuracy
// there (a form through 1 + tanh(u) was off by 30% at x = -5 and gave 0 from x = -6).
TEST(GeluTwin, LeftTailKeepsItsRelativeAccuracy) {
    std::vector<float> x;
    for (float v = -9.0f; v <= -2.0f; v += 0.25f) x.push_back(v);
    const int64_t n = static_cast<int64_t>(x.size());
    const std::vector<float> ones(n, 1.0f);
    std::vector<float> out(n), dx(n);
    std::vector<double> out_r(n), dx_r(n);
    kernels::gelu_forward(out.data(), x.data(), n);
    kernels::gelu_backward(dx.data(), ones.data(), x.data(), n);
    kernels::ref::gelu_forward(out_r.data(), convert<double>(x).data(), n);
    kernels::ref::gelu_backward(dx_r.data(), convert<double>(ones).data(), convert<double>(x).data(), n);
    for (int64_t i = 0; i < n; i++) {
        EXPECT_NEAR(out[i] / out_r[i], 1.0, 1e-5) << "x = " << x[i];
        EXPECT_NEAR(dx[i] / dx_r[i], 1.0, 1e-4) << "x = " << x[i];
    }
}

// Far out, GELU is 0 (left) or x (right) and its gradient 0 or 1, for any finite input: neither
// e^(-2u) nor the gradient's 2x·du (which grows like x³) may overflow into inf or NaN.
TEST(GeluTwin, FarTailsAreZeroOrIdentityWithoutOverflow) {
    const std::vector<float> left = {-9.7f, -22.0f, -31.0f, -40.0f, -1e4f, -1e13f, -1e30f, -3e38f};
    const std::vector<float> right = {9.7f, 31.0f, 1e4f, 1e13f, 1e30f, 3e38f, std::numeric_limits<float>::infinity()};
    for (const auto& [xs, is_left] : {std::pair{left, true}, std::pair{right, false}}) {
        const int64_t n = static_cast<int64_t>(xs.size());
        const std::vector<float> ones(n, 1.0f);
        std::vector<float> out(n), dx(n);
        kernels::gelu_forward(out.data(), xs.data(), n);
        kernels::gelu_backward(dx.data(), ones.data(), xs.data(), n);
        for (int64_t i = 0; i < n; i++) {
            if (is_left) {
                EXPECT_NEAR(out[i], 0.0f, 1e-30f) << "x = " << xs[i];  // GELU(-9.7) is -1e-34
            } else {
                EXPECT_EQ(out[i], xs[i]) << "x = " << xs[i];
            }
            EXPECT_EQ(dx[i], is_left ? 0.0f : 1.0f) << "x = " << xs[i];
        }
    }
    // The twin (double) up to where du overflows: its 1 - sigma must not be inf·0.
    const std::vector<double> x = {-22.0, -31.0, -100.0, -1e4, 22.0, 1e4}, ones(x.size(), 1.0);
    std::vector<double> dx_r(x.size());
    kernels::ref::gelu_backward(dx_r.data(), ones.data(), x.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); i++) EXPECT_EQ(dx_r[i], x[i] < 0 ? 0.0 : 1.0) << "x = " << x[i];
}

// The bf16 output (mixed precision) is the fp32 one rounded once.
TEST(GeluTwin, Bf16OutputIsTheRoundedFp32Output) {
    const int64_t n = 1000;
    const auto x = random_vector(n, 6, 4.0f);
    std::vector<float> y(n);
    std::vector<bf16> y_h(n), want(n);
    kernels::gelu_forward(y.data(), x.data(), n);
    kernels::gelu_forward(y_h.data(), x.data(), n);
    for (int64_t i = 0; i < n; i++) want[i] = to_bf16(y[i]);
    EXPECT_EQ(y_h, want);
}

// c_fc's fused bf16 backward equals the three passes it replaces, bit for bit: the fp32
// gradient rounded once, and column sums added to the bias gradient in the same order. Shapes
// whose columns split unevenly over threads, and a dbias that already holds a sum.
TEST(GeluTwin, FusedBf16BackwardWithBiasEqualsTheThreePasses) {
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 17}, {64, 1536}, {33, 1000}}) {
        const int64_t n = rows * cols;
        const auto x = random_vector(n, 7, 4.0f), dout = random_vector(n, 8);
        const auto start = random_vector(cols, 9);
        std::vector<float> dx(n), want_dbias = start, dbias = start;
        std::vector<bf16> want_h(n), dx_h(n, 0xFFFF);
        kernels::gelu_backward(dx.data(), dout.data(), x.data(), n);
        kernels::to_bf16(want_h.data(), dx.data(), n);
        kernels::bias_backward(want_dbias.data(), dx.data(), rows, cols);
        kernels::gelu_backward_bf16_bias(dx_h.data(), dbias.data(), dout.data(), x.data(), rows, cols);
        EXPECT_EQ(dx_h, want_h) << rows << " x " << cols;
        EXPECT_EQ(dbias, want_dbias) << rows << " x " << cols;
    }
}

// The forms that read a pre-activation kept in bf16 (mixed precision) give what the fp32 forms
// give on the same values widened, bit for bit.
TEST(GeluTwin, Bf16InputGivesWhatItsFp32ValuesGive) {
    const int64_t rows = 33, cols = 1000, n = rows * cols;
    const auto [x_h, x_wide] = round_to_bf16(random_vector(n, 10, 4.0f));
    const auto x = convert<float>(x_wide), dout = random_vector(n, 11);
    std::vector<bf16> y(n), y_from_h(n), dx(n), dx_from_h(n);
    kernels::gelu_forward(y.data(), x.data(), n);
    kernels::gelu_forward(y_from_h.data(), x_h.data(), n);
    EXPECT_EQ(y_from_h, y);
    std::vector<float> dbias(cols, 0.5f), dbias_from_h = dbias;
    kernels::gelu_backward_bf16_bias(dx.data(), dbias.data(), dout.data(), x.data(), rows, cols);
    kernels::gelu_backward_bf16_bias(dx_from_h.data(), dbias_from_h.data(), dout.data(), x_h.data(), rows, cols);
    EXPECT_EQ(dx_from_h, dx);
    EXPECT_EQ(dbias_from_h, dbias);
}

// The erf form's overloads for a bf16 pre-activation: the fp32 input's results, bit for bit.
TEST(GeluErfTwin, Bf16InputGivesWhatItsFp32ValuesGive) {
    const int64_t n = 5000;
    const auto [x_h, x_wide] = round_to_bf16(random_vector(n, 12, 4.0f));
    const auto x = convert<float>(x_wide), dout = random_vector(n, 13);
    std::vector<bf16> y(n), y_from_h(n);
    std::vector<float> dx(n), dx_from_h(n);
    kernels::gelu_erf_forward(y.data(), x.data(), n);
    kernels::gelu_erf_forward(y_from_h.data(), x_h.data(), n);
    kernels::gelu_erf_backward(dx.data(), dout.data(), x.data(), n);
    kernels::gelu_erf_backward(dx_from_h.data(), dout.data(), x_h.data(), n);
    EXPECT_EQ(y_from_h, y);
    EXPECT_EQ(dx_from_h, dx);
}

// The exact form's twin is x·Φ(x), Φ the standard normal CDF: known values.
TEST(GeluErfGrad, TwinIsXTimesNormalCdf) {
    const std::vector<double> x = {1.0, -1.0, 3.0, -3.0, 0.0};
    const std::vector<double> want = {0.8413447460685429, -0.15865525393145707, 2.99595030590511,
                                      -0.00404969409489028, 0.0};
    std::vector<double> out(x.size());
    kernels::ref::gelu_erf_forward(out.data(), x.data(), static_cast<int64_t>(x.size()));
    EXPECT_TRUE(close(out, want, 1e-14, 1e-15));
}

TEST(GeluErfGrad, FiniteDifferences) {
    const int64_t n = 23;
    auto x = random_vector<double>(n, 1, 3.0f);
    const auto dout = random_vector<double>(n, 2);
    std::vector<double> dx(n);
    kernels::ref::gelu_erf_backward(dx.data(), dout.data(), x.data(), n);
    const auto loss = [&] {
        std::vector<double> out(n);
        kernels::ref::gelu_erf_forward(out.data(), x.data(), n);
        return dot(out, dout);
    };
    expect_matches_finite_differences({{"inp", &x, &dx}}, loss);
}

TEST(GeluErfTwin, KernelMatchesTwinOnRemainderShapes) {
    for (const int64_t n : {1, 15, 17, 1000, 4099}) {
        auto x = random_vector(n, 3, 4.0f);
        x[0] = -12.0f;  // far tails: gelu -> 0 and -> x
        if (n > 1) x[1] = 12.0f;
        const auto dout = random_vector(n, 4);
        std::vector<float> out(n);
        std::vector<double> out_r(n);
        kernels::gelu_erf_forward(out.data(), x.data(), n);
        kernels::ref::gelu_erf_forward(out_r.data(), convert<double>(x).data(), n);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << "n=" << n;
        auto dx = std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());  // must be overwritten
        auto dx_r = convert<double>(dx);
        kernels::gelu_erf_backward(dx.data(), dout.data(), x.data(), n);
        kernels::ref::gelu_erf_backward(dx_r.data(), convert<double>(dout).data(), convert<double>(x).data(), n);
        EXPECT_TRUE(close(dx, dx_r, kTwinRtol, kTwinAtol)) << "n=" << n;
    }
}

// Relative precision wherever the result is a normal float, the left tail included (there
// gelu is tiny, and 1 + erf(x/√2) computed as a difference would lose every digit). gelu' is
// Φ(x) + x·φ(x), which cancel near x = −0.75: its error is relative to the terms' size.
TEST(GeluErfTwin, RelativePrecisionInBothTails) {
    std::vector<float> x;
    for (float v = -13.0f; v <= 13.0f; v += 1.0f / 256) x.push_back(v);
    const auto n = static_cast<int64_t>(x.size());
    std::vector<float> out(n), dx(n);
    std::vector<double> out_r(n), dx_r(n);
    const std::vector<float> ones(n, 1.0f);
    kernels::gelu_erf_forward(out.data(), x.data(), n);
    kernels::gelu_erf_backward(dx.data(), ones.data(), x.data(), n);
    kernels::ref::gelu_erf_forward(out_r.data(), convert<double>(x).data(), n);
    kernels::ref::gelu_erf_backward(dx_r.data(), convert<double>(ones).data(), convert<double>(x).data(), n);
    const double tol = 2e-6;
    for (int64_t i = 0; i < n; i++) {
        const double xi = x[i], cdf = 0.5 * std::erfc(-xi / std::sqrt(2.0)),
                     pdf = std::exp(-xi * xi / 2) / std::sqrt(2 * 3.14159265358979323846);
        if (std::abs(out_r[i]) > 1e-37) {
            EXPECT_NEAR(out[i], out_r[i], tol * std::abs(out_r[i])) << "gelu(" << xi << ")";
        }
        if (cdf + std::abs(xi) * pdf > 1e-37) {
            EXPECT_NEAR(dx[i], dx_r[i], tol * (cdf + std::abs(xi) * pdf)) << "gelu'(" << xi << ")";
        }
    }
}

TEST(GeluErfTwin, Bf16OutputIsTheRoundedFp32Output) {
    const int64_t n = 1000;
    const auto x = random_vector(n, 6, 4.0f);
    std::vector<float> y(n);
    std::vector<bf16> y_h(n), want(n);
    kernels::gelu_erf_forward(y.data(), x.data(), n);
    kernels::gelu_erf_forward(y_h.data(), x.data(), n);
    for (int64_t i = 0; i < n; i++) want[i] = to_bf16(y[i]);
    EXPECT_EQ(y_h, want);
}

}  // namespace
}  // namespace lmforge::test
