// RMSNorm: finite differences on the twin; kernel against twin, fused with the residual add,
// in fp32 and bf16; and the same bits whatever the thread count.
#include "kernels/rmsnorm.h"

#include <omp.h>

#include <limits>

#include "gradcheck.h"
#include "kernels/bf16.h"
#include "kernels/ref/rmsnorm.h"

namespace lmforge::test {
namespace {

constexpr float kEps = 1e-5f;  // Llama 2 and 3's rms_norm_eps

TEST(RmsNormGrad, FiniteDifferences) {
    const int64_t N = 3, C = 7;
    auto inp = random_vector<double>(N * C, 1, 2.0f), w = random_vector<double>(C, 2);
    const auto dout = random_vector<double>(N * C, 4);
    std::vector<double> out(N * C), rstd(N), dinp(N * C), dw(C);
    kernels::ref::rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, double{kEps});
    kernels::ref::rmsnorm_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(),
                                   rstd.data(), N, C);
    const auto loss = [&] {
        std::vector<double> o(N * C), r(N);
        kernels::ref::rmsnorm_forward(o.data(), r.data(), inp.data(), w.data(), N, C, double{kEps});
        return dot(o, dout);
    };
    expect_matches_finite_differences({{"inp", &inp, &dinp}, {"weight", &w, &dw}}, loss);
}

// The twin against the definition, on a row small enough to check by hand: x = (3, 4),
// mean(x²) = 12.5, w = (2, −1).
TEST(RmsNormGrad, TwinIsWeightTimesXOverRootMeanSquare) {
    const std::vector<double> x = {3.0, 4.0}, w = {2.0, -1.0};
    std::vector<double> out(2), rstd(1);
    kernels::ref::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), 1, 2, 0.0);
    const double r = 1.0 / std::sqrt(12.5);
    EXPECT_TRUE(close(out, std::vector<double>{6.0 * r, -4.0 * r}, 1e-15, 0.0));
    EXPECT_DOUBLE_EQ(rstd[0], r);
}

TEST(RmsNormTwin, KernelMatchesTwinOnRemainderShapes) {
    struct Shape { int64_t N, C; };
    for (const Shape s : {Shape{1, 1}, Shape{5, 17}, Shape{33, 48}, Shape{7, 771}, Shape{3, 2048}, Shape{200, 771},
                          Shape{70, 2048}}) {
        const int64_t N = s.N, C = s.C;
        // An offset: RMSNorm subtracts no mean, and rows far from zero must be as accurate.
        auto inp = random_vector(N * C, 11, 3.0f);
        for (auto& x : inp) x += 10.0f;
        const auto w = random_vector(C, 12), dout = random_vector(N * C, 14);
        const auto inp_r = convert<double>(inp), w_r = convert<double>(w);
        std::vector<float> out(N * C), rstd(N);
        std::vector<double> out_r(N * C), rstd_r(N);
        kernels::rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, kEps);
        kernels::ref::rmsnorm_forward(out_r.data(), rstd_r.data(), inp_r.data(), w_r.data(), N, C,
                                      double{kEps});
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << "N=" << N << " C=" << C;
        EXPECT_TRUE(close(rstd, rstd_r, kTwinRtol, 0.0)) << "N=" << N << " C=" << C;
        // Backward accumulates into what the buffers hold.
        auto dinp = random_vector(N * C, 15), dw = random_vector(C, 16);
        auto dinp_r = convert<double>(dinp), dw_r = convert<double>(dw);
        kernels::rmsnorm_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(),
                                  rstd.data(), N, C);
        kernels::ref::rmsnorm_backward(dinp_r.data(), dw_r.data(), convert<double>(dout).data(),
                                       inp_r.data(), w_r.data(), rstd_r.data(), N, C);
        EXPECT_TRUE(close(dinp, dinp_r, kTwinRtol, kTwinAtol)) << "N=" << N << " C=" << C;
        EXPECT_TRUE(close(dw, dw_r, kTwinRtol, kTwinAtol)) << "N=" << N << " C=" << C;
    }
}

// The fused residual add + RMSNorm is the two steps in one pass: its twin is the residual add
// followed by the RMSNorm twin. Output in fp32, and in bf16: the fp32 output rounded once,
// bit for bit, for the plain kernel as for the fused one. res may alias an input.
TEST(RmsNormTwin, ResidualFusedMatchesAddThenTwinAndBf16IsRoundedFp32) {
    for (const int64_t C : {int64_t{1}, int64_t{37}, int64_t{384}}) {
        const int64_t N = 5;
        const auto a = random_vector(N * C, 1, 3.0f), b = random_vector(N * C, 2), w = random_vector(C, 3);
        std::vector<double> res_r(N * C), out_r(N * C), rstd_r(N);
        for (int64_t i = 0; i < N * C; i++) res_r[i] = static_cast<double>(a[i] + b[i]);
        kernels::ref::rmsnorm_forward(out_r.data(), rstd_r.data(), res_r.data(), convert<double>(w).data(),
                                      N, C, double{kEps});
        std::vector<float> res(N * C), out(N * C), rstd(N);
        kernels::residual_rmsnorm_forward(res.data(), out.data(), rstd.data(), a.data(), b.data(), w.data(), N,
                                          C, kEps);
        EXPECT_TRUE(close(res, res_r, 0.0, 0.0)) << "C=" << C;
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << "C=" << C;
        EXPECT_TRUE(close(rstd, rstd_r, kTwinRtol, 0.0)) << "C=" << C;
        // The plain kernel on res gives the same bits.
        std::vector<float> plain(N * C), rstd2(N);
        kernels::rmsnorm_forward(plain.data(), rstd2.data(), res.data(), w.data(), N, C, kEps);
        EXPECT_EQ(plain, out) << "C=" << C;
        EXPECT_EQ(rstd2, rstd) << "C=" << C;
        // bf16 outputs, the residual written into a (aliased).
        std::vector<bf16> want_h(N * C), plain_h(N * C), fused_h(N * C);
        for (int64_t i = 0; i < N * C; i++) want_h[i] = to_bf16(out[i]);
        kernels::rmsnorm_forward(plain_h.data(), rstd2.data(), res.data(), w.data(), N, C, kEps);
        EXPECT_EQ(plain_h, want_h) << "C=" << C;
        auto a_then_res = a;
        kernels::residual_rmsnorm_forward(a_then_res.data(), fused_h.data(), rstd2.data(), a_then_res.data(),
                                          b.data(), w.data(), N, C, kEps);
        EXPECT_EQ(fused_h, want_h) << "C=" << C;
        EXPECT_EQ(a_then_res, res) << "C=" << C;
        EXPECT_EQ(rstd2, rstd) << "C=" << C;
    }
}

// eps is the caller's: on rows of small magnitude (~1e-3, mean square ~1e-6) 1e-6 and 1e-5
// give rstd that differ by half, and every forward overload follows the eps it is given.
TEST(RmsNormTwin, EpsIsTheCallersOnSmallRows) {
    const int64_t N = 4, C = 384;
    const auto a = random_vector(N * C, 21, 1e-3f), b = random_vector(N * C, 22, 1e-4f), w = random_vector(C, 23);
    std::vector<double> res_r(N * C);
    for (int64_t i = 0; i < N * C; i++) res_r[i] = static_cast<double>(a[i] + b[i]);
    const auto w_r = convert<double>(w);
    for (const float eps : {1e-6f, 1e-5f}) {
        std::vector<double> out_r(N * C), rstd_r(N);
        kernels::ref::rmsnorm_forward(out_r.data(), rstd_r.data(), res_r.data(), w_r.data(), N, C,
                                      static_cast<double>(eps));
        std::vector<float> res(N * C), out(N * C), rstd(N), plain(N * C), rstd2(N);
        kernels::residual_rmsnorm_forward(res.data(), out.data(), rstd.data(), a.data(), b.data(), w.data(), N,
                                          C, eps);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, 0.0)) << "eps=" << eps;
        EXPECT_TRUE(close(rstd, rstd_r, kTwinRtol, 0.0)) << "eps=" << eps;
        kernels::rmsnorm_forward(plain.data(), rstd2.data(), res.data(), w.data(), N, C, eps);
        EXPECT_TRUE(close(rstd2, rstd_r, kTwinRtol, 0.0)) << "eps=" << eps;
    }
    std::vector<double> out6(N * C), rstd6(N), out5(N * C), rstd5(N);
    kernels::ref::rmsnorm_forward(out6.data(), rstd6.data(), res_r.data(), w_r.data(), N, C, 1e-6);
    kernels::ref::rmsnorm_forward(out5.data(), rstd5.data(), res_r.data(), w_r.data(), N, C, 1e-5);
    for (int64_t n = 0; n < N; n++) EXPECT_GT(rstd6[n], 1.5 * rstd5[n]) << "row " << n;
}

// Forward and backward give the same bits on 1, 2, 3 and 5 threads: rows are whole, and
// dweight's column sums run over the rows in order whichever thread owns the column.
// Where the layer below reads the input gradient in bf16, backward also writes its bf16 copy:
// the gradient rounded once, bit for bit, with dinp and dweight unchanged; a frozen gain too.
TEST(RmsNormTwin, InputGradientsBf16CopyIsItRounded) {
    struct Shape { int64_t N, C; };
    for (const Shape s : {Shape{1, 1}, Shape{5, 17}, Shape{200, 771}, Shape{70, 2048}}) {
        const int64_t N = s.N, C = s.C;
        const auto inp = random_vector(N * C, 41, 3.0f), w = random_vector(C, 42), dout = random_vector(N * C, 43);
        std::vector<float> out(N * C), rstd(N);
        kernels::rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, kEps);
        for (const bool frozen : {false, true}) {
            auto dinp = random_vector(N * C, 44), dw = random_vector(C, 45);
            auto dinp2 = dinp, dw2 = dw;
            float* dweight = frozen ? nullptr : dw.data();
            float* dweight2 = frozen ? nullptr : dw2.data();
            kernels::rmsnorm_backward(dinp.data(), dweight, dout.data(), inp.data(), w.data(), rstd.data(), N, C);
            std::vector<bf16> dinp_h(N * C);
            kernels::rmsnorm_backward(dinp2.data(), dinp_h.data(), dweight2, dout.data(), inp.data(), w.data(),
                                      rstd.data(), N, C);
            EXPECT_EQ(dinp2, dinp) << "N=" << N << " C=" << C;
            EXPECT_EQ(dw2, dw) << "N=" << N << " C=" << C;
            std::vector<bf16> rounded(N * C);
            kernels::to_bf16(rounded.data(), dinp.data(), N * C);
            EXPECT_EQ(dinp_h, rounded) << "N=" << N << " C=" << C;
        }
    }
}

TEST(RmsNormTwin, SameBitsOnAnyThreadCount) {
    const int64_t N = 200, C = 771;
    const auto inp = random_vector(N * C, 31, 2.0f), w = random_vector(C, 32), dout = random_vector(N * C, 33);
    const auto start = random_vector(C, 34);
    const int before = omp_get_max_threads();
    std::vector<float> out1, rstd1, dinp1, dw1;
    for (const int threads : {1, 2, 3, 5}) {
        omp_set_num_threads(threads);
        std::vector<float> out(N * C), rstd(N), dinp(N * C, 0.0f), dw = start;
        kernels::rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, kEps);
        kernels::rmsnorm_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), rstd.data(), N, C);
        if (threads == 1) {
            out1 = out, rstd1 = rstd, dinp1 = dinp, dw1 = dw;
            continue;
        }
        EXPECT_EQ(out, out1) << threads << " threads";
        EXPECT_EQ(rstd, rstd1) << threads << " threads";
        EXPECT_EQ(dinp, dinp1) << threads << " threads";
        EXPECT_EQ(dw, dw1) << threads << " threads";
    }
    omp_set_num_threads(before);
}

}  // namespace
}  // namespace lmforge::test
