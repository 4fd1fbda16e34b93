// ReLU (DistilBERT's classification head): finite differences on the twin; kernel against twin.
#include "kernels/relu.h"

#include <limits>

#include "gradcheck.h"
#include "kernels/ref/relu.h"

namespace lmforge::test {
namespace {

TEST(ReluGrad, FiniteDifferences) {
    const int64_t n = 23;
    auto x = random_vector<double>(n, 1, 2.0f);
    for (double& v : x) {
        if (std::abs(v) < 0.05) v = 0.1;  // away from the kink, where differences straddle it
    }
    const auto dout = random_vector<double>(n, 2);
    std::vector<double> out(n), dx(n);
    kernels::ref::relu_forward(out.data(), x.data(), n);
    kernels::ref::relu_backward(dx.data(), dout.data(), out.data(), n);
    const auto loss = [&] {
        std::vector<double> o(n);
        kernels::ref::relu_forward(o.data(), x.data(), n);
        return dot(o, dout);
    };
    expect_matches_finite_differences({{"inp", &x, &dx}}, loss);
}

TEST(ReluTwin, KernelMatchesTwinOnRemainderShapes) {
    for (const int64_t n : {1, 15, 17, 1000, 4099}) {
        auto x = random_vector(n, 3, 3.0f);
        x[0] = 0.0f;  // the kink: output 0, gradient 0
        const auto dout = random_vector(n, 4);
        std::vector<float> out(n);
        std::vector<double> out_r(n);
        kernels::relu_forward(out.data(), x.data(), n);
        kernels::ref::relu_forward(out_r.data(), convert<double>(x).data(), n);
        EXPECT_TRUE(close(out, out_r, 0.0, 0.0)) << "n=" << n;
        auto in_place = x;  // in place, as the head runs it
        kernels::relu_forward(in_place.data(), in_place.data(), n);
        EXPECT_EQ(in_place, out) << "n=" << n;
        // dinp starts as NaN: the kernel must overwrite every element.
        auto dx = std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
        std::vector<double> dx_r(n);
        kernels::relu_backward(dx.data(), dout.data(), out.data(), n);
        kernels::ref::relu_backward(dx_r.data(), convert<double>(dout).data(), out_r.data(), n);
        EXPECT_TRUE(close(dx, dx_r, 0.0, 0.0)) << "n=" << n;
        EXPECT_EQ(dx[0], 0.0f);
    }
}

}  // namespace
}  // namespace lmforge::test
