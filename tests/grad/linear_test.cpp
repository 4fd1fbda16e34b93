// Linear layer (torch.nn.Linear layout, weight (OC, C)): finite differences on the twin;
// oneDNN and naive GEMM backends against the twin, in fp32 and bf16.
#include "kernels/linear.h"

#include <limits>

#include "backend/gemm.h"
#include "gradcheck.h"
#include "kernels/bf16.h"
#include "kernels/ref/linear.h"

namespace lmforge::test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(LinearGrad, FiniteDifferences) {
    const int64_t N = 3, C = 4, OC = 5;
    auto inp = random_vector<double>(N * C, 1), w = random_vector<double>(OC * C, 2),
         b = random_vector<double>(OC, 3);
    const auto dout = random_vector<double>(N * OC, 4);
    std::vector<double> dinp(N * C), dw(OC * C), db(OC);
    kernels::ref::linear_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(),
                                  w.data(), N, C, OC);
    const auto loss = [&] {
        std::vector<double> out(N * OC);
        kernels::ref::linear_forward(out.data(), inp.data(), w.data(), b.data(), N, C, OC);
        return dot(out, dout);
    };
    expect_matches_finite_differences({{"inp", &inp, &dinp}, {"weight", &w, &dw}, {"bias", &b, &db}},
                                      loss);
}

struct Shape { int64_t N, C, OC; };
const Shape kShapes[] = {{1, 1, 1}, {7, 37, 53}, {64, 48, 144}, {13, 96, 17}};

class LinearTwin : public ::testing::TestWithParam<backend::GemmKind> {};

TEST_P(LinearTwin, KernelMatchesTwinOnRemainderShapes) {
    auto gemm = backend::make_gemm(GetParam());
    for (const Shape s : kShapes) {
        const int64_t N = s.N, C = s.C, OC = s.OC;
        const auto inp = random_vector(N * C, 5), w = random_vector(OC * C, 6),
                   b = random_vector(OC, 7), dout = random_vector(N * OC, 8);
        const auto inp_r = convert<double>(inp), w_r = convert<double>(w), dout_r = convert<double>(dout);
        std::vector<float> out(N * OC);
        std::vector<double> out_r(N * OC);
        kernels::linear_forward(*gemm, out.data(), inp.data(), w.data(), b.data(), N, C, OC);
        kernels::ref::linear_forward(out_r.data(), inp_r.data(), w_r.data(), convert<double>(b).data(), N, C, OC);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
        // No bias.
        kernels::linear_forward(*gemm, out.data(), inp.data(), w.data(), nullptr, N, C, OC);
        kernels::ref::linear_forward(out_r.data(), inp_r.data(), w_r.data(), static_cast<const double*>(nullptr), N,
                                     C, OC);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
        // dinp starts as NaN: the kernel must overwrite every element.
        auto dinp = std::vector<float>(N * C, kNaN);
        auto dw = random_vector(OC * C, 10), db = random_vector(OC, 11);
        auto dinp_r = convert<double>(dinp), dw_r = convert<double>(dw), db_r = convert<double>(db);
        kernels::linear_backward(*gemm, dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, C,
                                 OC);
        kernels::ref::linear_backward(dinp_r.data(), dw_r.data(), db_r.data(), dout_r.data(), inp_r.data(),
                                      w_r.data(), N, C, OC);
        EXPECT_TRUE(close(dinp, dinp_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
        EXPECT_TRUE(close(dw, dw_r, kTwinRtol, kTwinAtol));
        EXPECT_TRUE(close(db, db_r, kTwinRtol, kTwinAtol));
        // Overwrite: dweight starts as NaN and equals the twin's from zero; no dinp, no dbias.
        auto dw_over = std::vector<float>(OC * C, kNaN);
        std::vector<double> dw_over_r(OC * C);
        kernels::linear_backward(*gemm, nullptr, dw_over.data(), nullptr, dout.data(), inp.data(), w.data(), N, C, OC,
                                 kernels::WeightGrad::Overwrite);
        kernels::ref::linear_backward(static_cast<double*>(nullptr), dw_over_r.data(), static_cast<double*>(nullptr),
                                      dout_r.data(), inp_r.data(), w_r.data(), N, C, OC);
        EXPECT_TRUE(close(dw_over, dw_over_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
    }
}

// Mixed precision: the kernel on bf16 inputs equals the twin on the same inputs rounded to
// bf16 (exact in double), up to fp32 accumulation; dbias comes from dout's fp32 copy.
TEST_P(LinearTwin, Bf16KernelMatchesTwinOnRoundedInputs) {
    auto gemm = backend::make_gemm(GetParam());
    for (const Shape s : kShapes) {
        const int64_t N = s.N, C = s.C, OC = s.OC;
        const auto inp = random_vector(N * C, 5), w = random_vector(OC * C, 6),
                   b = random_vector(OC, 7), dout = random_vector(N * OC, 8);
        const auto [inp_h, inp_r] = round_to_bf16(inp);
        const auto [w_h, w_r] = round_to_bf16(w);
        const auto [dout_h, dout_r] = round_to_bf16(dout);
        std::vector<float> out(N * OC);
        std::vector<double> out_r(N * OC);
        kernels::linear_forward_bf16(*gemm, out.data(), inp_h.data(), w_h.data(), b.data(), N, C, OC);
        kernels::ref::linear_forward(out_r.data(), inp_r.data(), w_r.data(), convert<double>(b).data(), N, C, OC);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
        // The output kept in bf16: the same, rounded once (to half a bf16 step).
        std::vector<bf16> out_h(N * OC, 0xFFFF);
        kernels::linear_forward_bf16(*gemm, out_h.data(), inp_h.data(), w_h.data(), b.data(), N, C, OC);
        for (int64_t i = 0; i < N * OC; i++) {
            ASSERT_NEAR(from_bf16(out_h[i]), out_r[i], std::abs(out_r[i]) * 0x1.0p-8 + kTwinAtol)
                << i << " of " << N << "x" << C << "x" << OC;
        }
        // dinp starts as NaN: the kernel must overwrite every element.
        auto dinp = std::vector<float>(N * C, kNaN);
        auto dw = random_vector(OC * C, 10), db = random_vector(OC, 11);
        auto dinp_r = convert<double>(dinp), dw_r = convert<double>(dw), db_r = convert<double>(db);
        kernels::linear_backward_bf16(*gemm, dinp.data(), dw.data(), db.data(), dout.data(), dout_h.data(),
                                      inp_h.data(), w_h.data(), N, C, OC);
        kernels::ref::linear_backward(dinp_r.data(), dw_r.data(), static_cast<double*>(nullptr), dout_r.data(),
                                      inp_r.data(), w_r.data(), N, C, OC);
        std::vector<double> no_dw(OC * C);  // dbias alone, from the fp32 dout
        kernels::ref::linear_backward(static_cast<double*>(nullptr), no_dw.data(), db_r.data(),
                                      convert<double>(dout).data(), inp_r.data(), w_r.data(), N, C, OC);
        EXPECT_TRUE(close(dinp, dinp_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
        EXPECT_TRUE(close(dw, dw_r, kTwinRtol, kTwinAtol));
        EXPECT_TRUE(close(db, db_r, kTwinRtol, kTwinAtol));
        // Overwrite.
        auto dw_over = std::vector<float>(OC * C, kNaN);
        std::vector<double> dw_over_r(OC * C);
        kernels::linear_backward_bf16(*gemm, nullptr, dw_over.data(), nullptr, dout.data(), dout_h.data(),
                                      inp_h.data(), w_h.data(), N, C, OC, kernels::WeightGrad::Overwrite);
        kernels::ref::linear_backward(static_cast<double*>(nullptr), dw_over_r.data(), static_cast<double*>(nullptr),
                                      dout_r.data(), inp_r.data(), w_r.data(), N, C, OC);
        EXPECT_TRUE(close(dw_over, dw_over_r, kTwinRtol, kTwinAtol)) << N << "x" << C << "x" << OC;
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, LinearTwin,
                         ::testing::Values(backend::GemmKind::Onednn, backend::GemmKind::Naive),
                         [](const auto& info) {
                             return std::string(backend::make_gemm(info.param)->name());
                         });

}  // namespace
}  // namespace lmforge::test
