// GELU (tanh form): finite differences on the twin; kernel against twin.
#include "kernels/gelu.h"

#include <limits>

#include "gradcheck.h"
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

}  // namespace
}  // namespace lmforge::test
