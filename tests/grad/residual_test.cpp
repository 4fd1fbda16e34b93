// Residual add: finite differences on the twin; kernel against twin.
#include "kernels/residual.h"

#include "gradcheck.h"
#include "kernels/ref/residual.h"

namespace lmforge::test {
namespace {

TEST(ResidualGrad, FiniteDifferences) {
    const int64_t n = 9;
    auto a = random_vector<double>(n, 1), b = random_vector<double>(n, 2);
    const auto dout = random_vector<double>(n, 3);
    std::vector<double> da(n), db(n);
    kernels::ref::residual_backward(da.data(), db.data(), dout.data(), n);
    const auto loss = [&] {
        std::vector<double> out(n);
        kernels::ref::residual_forward(out.data(), a.data(), b.data(), n);
        return dot(out, dout);
    };
    expect_matches_finite_differences({{"a", &a, &da}, {"b", &b, &db}}, loss);
}

TEST(ResidualTwin, KernelMatchesTwinOnRemainderShapes) {
    for (const int64_t n : {1, 17, 4099}) {
        const auto a = random_vector(n, 4), b = random_vector(n, 5), dout = random_vector(n, 6);
        std::vector<float> out(n);
        std::vector<double> out_r(n);
        kernels::residual_forward(out.data(), a.data(), b.data(), n);
        kernels::ref::residual_forward(out_r.data(), convert<double>(a).data(),
                                       convert<double>(b).data(), n);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol));
        auto da = random_vector(n, 7), db = random_vector(n, 8);
        auto da_r = convert<double>(da), db_r = convert<double>(db);
        kernels::residual_backward(da.data(), db.data(), dout.data(), n);
        kernels::ref::residual_backward(da_r.data(), db_r.data(), convert<double>(dout).data(), n);
        EXPECT_TRUE(close(da, da_r, kTwinRtol, kTwinAtol));
        EXPECT_TRUE(close(db, db_r, kTwinRtol, kTwinAtol));
    }
}

}  // namespace
}  // namespace lmforge::test
