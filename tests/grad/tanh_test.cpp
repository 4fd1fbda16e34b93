// tanh (BERT's pooler activation): finite differences on the twin; kernel against twin.
#include "kernels/tanh.h"

#include <limits>

#include "gradcheck.h"
#include "kernels/ref/tanh.h"

namespace lmforge::test {
namespace {

TEST(TanhGrad, FiniteDifferences) {
    const int64_t n = 23;
    auto x = random_vector<double>(n, 1, 2.0f);
    const auto dout = random_vector<double>(n, 2);
    std::vector<double> out(n), dx(n);
    kernels::ref::tanh_forward(out.data(), x.data(), n);
    kernels::ref::tanh_backward(dx.data(), dout.data(), out.data(), n);
    const auto loss = [&] {
        std::vector<double> o(n);
        kernels::ref::tanh_forward(o.data(), x.data(), n);
        return dot(o, dout);
    };
    expect_matches_finite_differences({{"inp", &x, &dx}}, loss);
}

TEST(TanhTwin, KernelMatchesTwinOnRemainderShapes) {
    for (const int64_t n : {1, 15, 17, 1000, 4099}) {
        auto x = random_vector(n, 3, 3.0f);
        x[0] = -20.0f;  // saturated: exactly ±1, zero gradient
        if (n > 1) x[1] = 20.0f;
        const auto dout = random_vector(n, 4);
        std::vector<float> out(n);
        std::vector<double> out_r(n);
        kernels::tanh_forward(out.data(), x.data(), n);
        kernels::ref::tanh_forward(out_r.data(), convert<double>(x).data(), n);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << "n=" << n;
        // In place, as the pooler runs it.
        auto in_place = x;
        kernels::tanh_forward(in_place.data(), in_place.data(), n);
        EXPECT_EQ(in_place, out) << "n=" << n;
        // dinp starts as NaN: the kernel must overwrite every element.
        auto dx = std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
        std::vector<double> dx_r(n);
        kernels::tanh_backward(dx.data(), dout.data(), out.data(), n);
        kernels::ref::tanh_backward(dx_r.data(), convert<double>(dout).data(), out_r.data(), n);
        EXPECT_TRUE(close(dx, dx_r, kTwinRtol, kTwinAtol)) << "n=" << n;
    }
}

}  // namespace
}  // namespace lmforge::test
