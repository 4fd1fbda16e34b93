// Linear layer (Conv1D layout): finite differences on the twin; oneDNN and naive GEMM
// backends against the twin.
#include "kernels/matmul.h"

#include "backend/gemm.h"
#include <limits>
#include <utility>

#include "gradcheck.h"
#include "kernels/bf16.h"
#include "kernels/ref/matmul.h"

namespace lmforge::test {
namespace {

TEST(MatmulGrad, FiniteDifferences) {
    const int64_t N = 3, C = 4, OC = 5;
    auto inp = random_vector<double>(N * C, 1), w = random_vector<double>(C * OC, 2),
         b = random_vector<double>(OC, 3);
    const auto dout = random_vector<double>(N * OC, 4);
    std::vector<double> dinp(N * C), dw(C * OC), db(OC);
    kernels::ref::matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(),
                                  w.data(), N, C, OC);
    const auto loss = [&] {
        std::vector<double> out(N * OC);
        kernels::ref::matmul_forward(out.data(), inp.data(), w.data(), b.data(), N, C, OC);
        return dot(out, dout);
    };
    expect_matches_finite_differences({{"inp", &inp, &dinp}, {"weight", &w, &dw}, {"bias", &b, &db}},
                                      loss);
}

class MatmulTwin : public ::testing::TestWithParam<backend::GemmKind> {};

TEST_P(MatmulTwin, KernelMatchesTwinOnRemainderShapes) {
    auto gemm = backend::make_gemm(GetParam());
    struct Shape { int64_t N, C, OC; };
    for (const Shape s : {Shape{1, 1, 1}, Shape{7, 37, 53}, Shape{64, 48, 144}, Shape{13, 96, 17}}) {
        const int64_t N = s.N, C = s.C, OC = s.OC;
        const auto inp = random_vector(N * C, 5), w = random_vector(C * OC, 6),
                   b = random_vector(OC, 7), dout = random_vector(N * OC, 8);
        std::vector<float> out(N * OC);
        std::vector<double> out_r(N * OC);
        const auto inp_r = convert<double>(inp), w_r = convert<double>(w);
        kernels::matmul_forward(*gemm, out.data(), inp.data(), w.data(), b.data(), N, C, OC);
        kernels::ref::matmul_forward(out_r.data(), inp_r.data(), w_r.data(),
                                     convert<double>(b).data(), N, C, OC);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
        // dinp starts as NaN: the kernel must overwrite every element.
        auto dinp = std::vector<float>(N * C, std::numeric_limits<float>::quiet_NaN());
        auto dw = random_vector(C * OC, 10), db = random_vector(OC, 11);
        auto dinp_r = convert<double>(dinp), dw_r = convert<double>(dw), db_r = convert<double>(db);
        kernels::matmul_backward(*gemm, dinp.data(), dw.data(), db.data(), dout.data(), inp.data(),
                                 w.data(), N, C, OC);
        kernels::ref::matmul_backward(dinp_r.data(), dw_r.data(), db_r.data(),
                                      convert<double>(dout).data(), inp_r.data(), w_r.data(), N,
                                      C, OC);
        EXPECT_TRUE(close(dinp, dinp_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
        EXPECT_TRUE(close(dw, dw_r, kTwinRtol, kTwinAtol));
        EXPECT_TRUE(close(db, db_r, kTwinRtol, kTwinAtol));
    }
}

// Mixed precision: the kernel on bf16 inputs equals the twin on the same inputs rounded to
// bf16 (exact in double), up to fp32 accumulation; dbias comes from dout's fp32 copy.
TEST_P(MatmulTwin, Bf16KernelMatchesTwinOnRoundedInputs) {
    auto gemm = backend::make_gemm(GetParam());
    struct Shape { int64_t N, C, OC; };
    for (const Shape s : {Shape{1, 1, 1}, Shape{7, 37, 53}, Shape{64, 48, 144}, Shape{13, 96, 17}}) {
        const int64_t N = s.N, C = s.C, OC = s.OC;
        const auto inp = random_vector(N * C, 5), w = random_vector(C * OC, 6),
                   b = random_vector(OC, 7), dout = random_vector(N * OC, 8);
        const auto [inp_h, inp_r] = round_to_bf16(inp);
        const auto [w_h, w_r] = round_to_bf16(w);
        const auto [dout_h, dout_r] = round_to_bf16(dout);
        std::vector<float> out(N * OC);
        std::vector<double> out_r(N * OC);
        kernels::matmul_forward_bf16(*gemm, out.data(), inp_h.data(), w_h.data(), b.data(), N, C, OC);
        kernels::ref::matmul_forward(out_r.data(), inp_r.data(), w_r.data(), convert<double>(b).data(), N, C, OC);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
        // The output kept in bf16: the same, rounded once (to half a bf16 step).
        std::vector<bf16> out_h(N * OC, 0xFFFF);
        kernels::matmul_forward_bf16(*gemm, out_h.data(), inp_h.data(), w_h.data(), b.data(), N, C, OC);
        for (int64_t i = 0; i < N * OC; i++) {
            ASSERT_NEAR(from_bf16(out_h[i]), out_r[i], std::abs(out_r[i]) * 0x1.0p-8 + kTwinAtol)
                << i << " of " << N << "x" << C << "x" << OC;
        }
        // dinp starts as NaN: the kernel must overwrite every element.
        auto dinp = std::vector<float>(N * C, std::numeric_limits<float>::quiet_NaN());
        auto dw = random_vector(C * OC, 10), db = random_vector(OC, 11);
        auto dinp_r = convert<double>(dinp), dw_r = convert<double>(dw), db_r = convert<double>(db);
        kernels::matmul_backward_bf16(*gemm, dinp.data(), dw.data(), db.data(), dout.data(), dout_h.data(),
                                      inp_h.data(), w_h.data(), N, C, OC);
        kernels::ref::matmul_backward(dinp_r.data(), dw_r.data(), static_cast<double*>(nullptr), dout_r.data(), inp_r.data(),
                                      w_r.data(), N, C, OC);
        std::vector<double> no_dw(C * OC);  // dbias alone, from the fp32 dout
        kernels::ref::matmul_backward(static_cast<double*>(nullptr), no_dw.data(), db_r.data(), convert<double>(dout).data(),
                                      inp_r.data(), w_r.data(), N, C, OC);
        EXPECT_TRUE(close(dinp, dinp_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
        EXPECT_TRUE(close(dw, dw_r, kTwinRtol, kTwinAtol));
        EXPECT_TRUE(close(db, db_r, kTwinRtol, kTwinAtol));
    }
}

// The bf16 copy of a layer's output gradient and its bias sums in one pass: bit for bit the
// two passes (to_bf16, bias_backward) on shapes whose columns split unevenly over threads,
// into a dbias already holding a sum; without a bias, only the copy.
TEST(MatmulBias, Bf16CopyWithBiasSumsEqualsTheTwoPasses) {
    for (const auto& [N, OC] : {std::pair<int64_t, int64_t>{1, 1}, {5, 17}, {64, 1152}, {33, 1000}}) {
        const auto dout = random_vector(N * OC, 3);
        const auto start = random_vector(OC, 4);
        std::vector<bf16> want_h(N * OC), dout_h(N * OC, 0xFFFF), plain_h(N * OC, 0xFFFF);
        std::vector<float> want_dbias = start, dbias = start;
        kernels::to_bf16(want_h.data(), dout.data(), N * OC);
        kernels::bias_backward(want_dbias.data(), dout.data(), N, OC);
        kernels::to_bf16_with_bias_backward(dout_h.data(), dbias.data(), dout.data(), N, OC);
        kernels::to_bf16_with_bias_backward(plain_h.data(), nullptr, dout.data(), N, OC);
        EXPECT_EQ(dout_h, want_h) << N << " x " << OC;
        EXPECT_EQ(plain_h, want_h) << N << " x " << OC;
        EXPECT_EQ(dbias, want_dbias) << N << " x " << OC;
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, MatmulTwin,
                         ::testing::Values(backend::GemmKind::Onednn, backend::GemmKind::Naive),
                         [](const auto& info) {
                             return std::string(backend::make_gemm(info.param)->name());
                         });

}  // namespace
}  // namespace lmforge::test
