// LayerNorm: finite differences on the twin; kernel against twin.
#include "kernels/layernorm.h"

#include "gradcheck.h"
#include "kernels/ref/layernorm.h"

namespace lmforge::test {
namespace {

TEST(LayerNormGrad, FiniteDifferences) {
    const int64_t N = 3, C = 7;
    auto inp = random_vector<double>(N * C, 1, 2.0f), w = random_vector<double>(C, 2),
         b = random_vector<double>(C, 3);
    const auto dout = random_vector<double>(N * C, 4);
    std::vector<double> out(N * C), mean(N), rstd(N), dinp(N * C), dw(C), db(C);
    kernels::ref::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(),
                                    b.data(), N, C);
    kernels::ref::layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(),
                                     w.data(), mean.data(), rstd.data(), N, C);
    const auto loss = [&] {
        std::vector<double> o(N * C), m(N), r(N);
        kernels::ref::layernorm_forward(o.data(), m.data(), r.data(), inp.data(), w.data(),
                                        b.data(), N, C);
        return dot(o, dout);
    };
    expect_matches_finite_differences({{"inp", &inp, &dinp}, {"weight", &w, &dw}, {"bias", &b, &db}},
                                      loss);
}

TEST(LayerNormTwin, KernelMatchesTwinOnRemainderShapes) {
    struct Shape { int64_t N, C; };
    for (const Shape s : {Shape{1, 1}, Shape{5, 17}, Shape{33, 48}, Shape{7, 771}}) {
        const int64_t N = s.N, C = s.C;
        // An offset mean checks that the variance does not cancel catastrophically.
        auto inp = random_vector(N * C, 11, 3.0f);
        for (auto& x : inp) x += 10.0f;
        const auto w = random_vector(C, 12), b = random_vector(C, 13), dout = random_vector(N * C, 14);
        std::vector<float> out(N * C), mean(N), rstd(N);
        std::vector<double> out_r(N * C), mean_r(N), rstd_r(N);
        const auto inp_r = convert<double>(inp), w_r = convert<double>(w);
        kernels::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(),
                                   b.data(), N, C);
        kernels::ref::layernorm_forward(out_r.data(), mean_r.data(), rstd_r.data(), inp_r.data(),
                                        w_r.data(), convert<double>(b).data(), N, C);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << "N=" << N << " C=" << C;
        EXPECT_TRUE(close(rstd, rstd_r, kTwinRtol, kTwinAtol));
        auto dinp = random_vector(N * C, 15), dw = random_vector(C, 16), db = random_vector(C, 17);
        auto dinp_r = convert<double>(dinp), dw_r = convert<double>(dw), db_r = convert<double>(db);
        kernels::layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(),
                                    w.data(), mean.data(), rstd.data(), N, C);
        kernels::ref::layernorm_backward(dinp_r.data(), dw_r.data(), db_r.data(),
                                         convert<double>(dout).data(), inp_r.data(), w_r.data(),
                                         mean_r.data(), rstd_r.data(), N, C);
        EXPECT_TRUE(close(dinp, dinp_r, kTwinRtol, kTwinAtol)) << "N=" << N << " C=" << C;
        EXPECT_TRUE(close(dw, dw_r, kTwinRtol, kTwinAtol));
        EXPECT_TRUE(close(db, db_r, kTwinRtol, kTwinAtol));
    }
}

}  // namespace
}  // namespace lmforge::test
