// SwiGLU: finite differences on the twin; kernel against twin, relative precision in both
// tails, no overflow far out; bf16 outputs and gradients are the fp32 ones rounded once, and the
// one pass from the GEMM's fp32 output is the rounding and the bf16 pass.
#include "kernels/swiglu.h"

#include <cmath>
#include <limits>

#include "gradcheck.h"
#include "kernels/ref/swiglu.h"

namespace lmforge::test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(SwigluGrad, FiniteDifferences) {
    const int64_t N = 3, H = 5;
    auto gate_up = random_vector<double>(N * 2 * H, 1, 3.0f);
    const auto dout = random_vector<double>(N * H, 2);
    std::vector<double> dgate_up(N * 2 * H);
    kernels::ref::swiglu_backward(dgate_up.data(), dout.data(), gate_up.data(), N, H);
    const auto loss = [&] {
        std::vector<double> out(N * H);
        kernels::ref::swiglu_forward(out.data(), gate_up.data(), N, H);
        return dot(out, dout);
    };
    expect_matches_finite_differences({{"gate_up", &gate_up, &dgate_up}}, loss);
}

// The twin against known values: silu(1) = 1 / (1 + e^-1), silu(-2) = -2 / (1 + e^2).
TEST(SwigluGrad, TwinIsSiluOfGateTimesUp) {
    const std::vector<double> gate_up = {1.0, -2.0, 0.0, 3.0, 0.5, 7.0};  // N = 1, H = 3
    std::vector<double> out(3);
    kernels::ref::swiglu_forward(out.data(), gate_up.data(), 1, 3);
    const std::vector<double> want = {3.0 / (1.0 + std::exp(-1.0)), -1.0 / (1.0 + std::exp(2.0)), 0.0};
    EXPECT_TRUE(close(out, want, 1e-15, 0.0));
}

// fast_exp is good to about 2 ulp: silu(g)·up within 1e-6 relative of the double twin, and so
// are both halves of the gradient, d gate relative to the size of its terms (silu'(g) is a
// sum that cancels near g = −1.28).
TEST(SwigluTwin, KernelMatchesTwinOnRemainderShapes) {
    struct Shape { int64_t N, H; };
    for (const Shape s : {Shape{1, 1}, Shape{3, 15}, Shape{5, 17}, Shape{2, 771}, Shape{9, 1024}}) {
        const int64_t N = s.N, H = s.H;
        auto gate_up = random_vector(N * 2 * H, 3, 4.0f);
        gate_up[0] = -30.0f;  // the first gate in the left tail, where silu is tiny (-2.8e-12)
        const auto dout = random_vector(N * H, 4);
        std::vector<float> out(N * H, kNaN), dgate_up(N * 2 * H, kNaN);  // both must be written
        std::vector<double> out_r(N * H), dgate_up_r(N * 2 * H);
        const auto gate_up_r = convert<double>(gate_up);
        kernels::swiglu_forward(out.data(), gate_up.data(), N, H);
        kernels::ref::swiglu_forward(out_r.data(), gate_up_r.data(), N, H);
        EXPECT_TRUE(close(out, out_r, 1e-6, 1e-30)) << "N=" << N << " H=" << H;
        kernels::swiglu_backward(dgate_up.data(), dout.data(), gate_up.data(), N, H);
        kernels::ref::swiglu_backward(dgate_up_r.data(), convert<double>(dout).data(), gate_up_r.data(), N, H);
        for (int64_t n = 0; n < N; n++) {
            for (int64_t h = 0; h < H; h++) {
                const int64_t i = n * 2 * H + h;
                const double g = gate_up[i], du = std::abs(double{dout[n * H + h]} * gate_up[i + H]);
                const double sigma = kernels::ref::sigmoid(g), terms = sigma + std::abs(g) * sigma * (1 - sigma);
                EXPECT_NEAR(dgate_up[i], dgate_up_r[i], 1e-6 * du * terms + 1e-30) << "d gate, H=" << H;
                EXPECT_NEAR(dgate_up[i + H], dgate_up_r[i + H], 1e-6 * std::abs(dgate_up_r[i + H]) + 1e-30)
                    << "d up, H=" << H;
            }
        }
    }
}

// Relative precision wherever the result is a normal float, the left tail included, where silu
// is tiny. silu'(g) = σ + g·σ·(1 − σ) cancels near g = −1.28: its error is relative to the
// terms' size there. Below g = −88.7 e^(−g) overflows and silu is −0 (torch's form,
// g / (1 + e^(−g)), gives the same), so the sweep stops there; the gradient is held to it
// while σ(g) is a normal float (g above −87.3; fast_exp gives 0 below, and silu' is then 0
// instead of at most 1e-36 in size).
TEST(SwigluTwin, RelativePrecisionInBothTails) {
    std::vector<float> gate;
    for (float g = -88.0f; g <= 88.0f; g += 1.0f / 64) gate.push_back(g);
    const auto H = static_cast<int64_t>(gate.size());
    std::vector<float> gate_up(gate), ones(H, 1.0f);
    gate_up.insert(gate_up.end(), ones.begin(), ones.end());  // up = 1: out is silu(gate)
    std::vector<float> out(H), dgate_up(2 * H);
    std::vector<double> out_r(H), dgate_up_r(2 * H);
    kernels::swiglu_forward(out.data(), gate_up.data(), 1, H);
    kernels::swiglu_backward(dgate_up.data(), ones.data(), gate_up.data(), 1, H);
    kernels::ref::swiglu_forward(out_r.data(), convert<double>(gate_up).data(), 1, H);
    kernels::ref::swiglu_backward(dgate_up_r.data(), convert<double>(ones).data(), convert<double>(gate_up).data(),
                                  1, H);
    const double tol = 1e-6;
    for (int64_t i = 0; i < H; i++) {
        const double g = gate[i], s = kernels::ref::sigmoid(g), terms = s + std::abs(g) * s * (1 - s);
        if (s > std::numeric_limits<float>::min()) {
            EXPECT_NEAR(dgate_up[i], dgate_up_r[i], tol * terms) << "silu'(" << g << ")";
        }
        if (std::abs(out_r[i]) > 1e-37) {
            EXPECT_NEAR(out[i], out_r[i], tol * std::abs(out_r[i])) << "silu(" << g << ")";
            EXPECT_NEAR(dgate_up[H + i], out_r[i], tol * std::abs(out_r[i])) << "d up = silu(" << g << ")";
        }
    }
}

// Far out, silu is 0 (left) or the gate itself (right), its gradient 0 or 1, for any finite
// gate: no e^(±g) may overflow into inf·0 or inf/inf.
TEST(SwigluTwin, FarTailsWithoutOverflow) {
    const std::vector<float> gate = {-100.0f, -1e4f, -1e30f, -3e38f, 100.0f, 1e4f, 1e30f, 3e38f};
    const auto H = static_cast<int64_t>(gate.size());
    std::vector<float> gate_up(gate), ones(H, 1.0f);
    gate_up.insert(gate_up.end(), ones.begin(), ones.end());
    std::vector<float> out(H), dgate_up(2 * H);
    kernels::swiglu_forward(out.data(), gate_up.data(), 1, H);
    kernels::swiglu_backward(dgate_up.data(), ones.data(), gate_up.data(), 1, H);
    for (int64_t i = 0; i < H; i++) {
        const bool left = gate[i] < 0;
        EXPECT_EQ(out[i], left ? 0.0f : gate[i]) << "g = " << gate[i];
        EXPECT_EQ(dgate_up[i], left ? 0.0f : 1.0f) << "g = " << gate[i];
        EXPECT_EQ(dgate_up[H + i], left ? 0.0f : gate[i]) << "g = " << gate[i];
    }
    // The twin (double), as far as its own exponent reaches.
    const std::vector<double> g_r = {-800.0, -1e30, 800.0, 1e30, 1.0, 1.0, 1.0, 1.0}, ones_r(4, 1.0);
    std::vector<double> out_r(4), d_r(8);
    kernels::ref::swiglu_forward(out_r.data(), g_r.data(), 1, 4);
    kernels::ref::swiglu_backward(d_r.data(), ones_r.data(), g_r.data(), 1, 4);
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(out_r[i], g_r[i] < 0 ? 0.0 : g_r[i]) << "g = " << g_r[i];
        EXPECT_EQ(d_r[i], g_r[i] < 0 ? 0.0 : 1.0) << "g = " << g_r[i];
    }
}

// Mixed precision: the bf16 output and the bf16 gradient are the fp32 ones rounded once.
TEST(SwigluTwin, Bf16IsTheRoundedFp32) {
    for (const int64_t H : {int64_t{1}, int64_t{17}, int64_t{771}}) {
        const int64_t N = 6;
        const auto gate_up = random_vector(N * 2 * H, 5, 4.0f), dout = random_vector(N * H, 6);
        std::vector<float> out(N * H), dgate_up(N * 2 * H);
        std::vector<bf16> out_h(N * H), dgate_up_h(N * 2 * H, 0xFFFF), want_out(N * H), want_d(N * 2 * H);
        kernels::swiglu_forward(out.data(), gate_up.data(), N, H);
        kernels::swiglu_forward(out_h.data(), gate_up.data(), N, H);
        kernels::swiglu_backward(dgate_up.data(), dout.data(), gate_up.data(), N, H);
        kernels::swiglu_backward(dgate_up_h.data(), dout.data(), gate_up.data(), N, H);
        for (int64_t i = 0; i < N * H; i++) want_out[i] = to_bf16(out[i]);
        for (int64_t i = 0; i < N * 2 * H; i++) want_d[i] = to_bf16(dgate_up[i]);
        EXPECT_EQ(out_h, want_out) << "H=" << H;
        EXPECT_EQ(dgate_up_h, want_d) << "H=" << H;
    }
}

// From gate_up kept in bf16: what the fp32 input of the same values gives, bit for bit.
TEST(SwigluTwin, Bf16InputGivesWhatItsFp32ValuesGive) {
    const int64_t N = 7, H = 771;
    const auto [gate_up_h, gate_up_wide] = round_to_bf16(random_vector(N * 2 * H, 7, 4.0f));
    const auto gate_up = convert<float>(gate_up_wide), dout = random_vector(N * H, 8);
    std::vector<bf16> out(N * H), out_from_h(N * H), d(N * 2 * H), d_from_h(N * 2 * H);
    kernels::swiglu_forward(out.data(), gate_up.data(), N, H);
    kernels::swiglu_forward(out_from_h.data(), gate_up_h.data(), N, H);
    kernels::swiglu_backward(d.data(), dout.data(), gate_up.data(), N, H);
    kernels::swiglu_backward(d_from_h.data(), dout.data(), gate_up_h.data(), N, H);
    EXPECT_EQ(out_from_h, out);
    EXPECT_EQ(d_from_h, d);
}

// From the GEMM's fp32 output in one pass: the bf16 copy is gate_up rounded, and the output what
// the bf16 copy gives, bit for bit (recompute reruns SwiGLU from that copy).
TEST(SwigluTwin, OnePassFromFp32WritesTheRoundedCopyAndItsOutput) {
    for (const int64_t H : {int64_t{1}, int64_t{17}, int64_t{771}}) {
        const int64_t N = 5;
        const auto gate_up = random_vector(N * 2 * H, 9, 4.0f);
        std::vector<bf16> copy(N * 2 * H, 0xFFFF), out(N * H, 0xFFFF), want_copy(N * 2 * H), want_out(N * H);
        kernels::swiglu_forward(out.data(), copy.data(), gate_up.data(), N, H);
        for (int64_t i = 0; i < N * 2 * H; i++) want_copy[i] = to_bf16(gate_up[i]);
        kernels::swiglu_forward(want_out.data(), want_copy.data(), N, H);
        EXPECT_EQ(copy, want_copy) << "H=" << H;
        EXPECT_EQ(out, want_out) << "H=" << H;
    }
}

}  // namespace
}  // namespace lmforge::test
