// Rows go to threads whole; within a row, gate and up are the two halves, read side by side.
// The exponential is fast_math.h's (about 2 ulp, so silu and its gradient keep ~1e-7 relative
// accuracy; tests/grad/swiglu_test.cpp holds them to 1e-6 of the double twin).
#include "kernels/swiglu.h"

#include "kernels/bf16.h"
#include "kernels/fast_math.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

// silu(g) = g / (1 + e^(−g)), torch's own form of it. Far left, e^(−g) overflows to inf and
// silu is g / inf = −0, as it should be (for finite g); far right, e^(−g) is 0 and silu is g.
#pragma omp declare simd notinbranch
inline float silu(float g) { return g / (1.0f + fast_exp(-g)); }

// silu'(g) = σ(g) + g·σ(g)·(1 − σ(g)). Both σ(g) and 1 − σ(g) come from e = e^(−|g|), which
// is at most 1: σ(|g|) = 1 / (1 + e), σ(−|g|) = e / (1 + e). No exponential overflows (e^(−g)
// would, for g below −88.7, and e·σ would then be inf·0), and 1 − σ is never a difference
// that loses the tail. From g = −87.3, where e^g is no longer a normal float, fast_exp gives 0
// and so does silu' (whose true value is below 1e-36 there).
#pragma omp declare simd notinbranch
inline float silu_grad(float g) {
    const float e = fast_exp(g < 0.0f ? g : -g);
    const float p = 1.0f / (1.0f + e), q = e * p;
    const float sigma = g < 0.0f ? q : p, one_minus_sigma = g < 0.0f ? p : q;
    return sigma + g * sigma * one_minus_sigma;
}

template <class Out, class In>
void forward_rows(Out* out, const In* gate_up, int64_t N, int64_t H) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const In* gate = gate_up + n * 2 * H;
        const In* up = gate + H;
        Out* o = out + n * H;
#pragma omp simd
        for (int64_t h = 0; h < H; h++) o[h] = float_to<Out>(silu(to_float(gate[h])) * to_float(up[h]));
    }
}

// Mixed precision's forward from the GEMM's fp32 output: gate and up rounded to bf16 as they are
// read, kept, and multiplied from the rounded values.
void forward_rounding_rows(bf16* out, bf16* gate_up_h, const float* gate_up, int64_t N, int64_t H) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const float* gate = gate_up + n * 2 * H;
        const float* up = gate + H;
        bf16* gate_h = gate_up_h + n * 2 * H;
        bf16* up_h = gate_h + H;
        bf16* o = out + n * H;
#pragma omp simd
        for (int64_t h = 0; h < H; h++) {
            const bf16 g = lmforge::to_bf16(gate[h]), u = lmforge::to_bf16(up[h]);
            gate_h[h] = g;
            up_h[h] = u;
            o[h] = lmforge::to_bf16(silu(from_bf16(g)) * from_bf16(u));
        }
    }
}

template <class Out, class In>
void backward_rows(Out* dgate_up, const float* dout, const In* gate_up, int64_t N, int64_t H) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const In* gate = gate_up + n * 2 * H;
        const In* up = gate + H;
        const float* d = dout + n * H;
        Out* dgate = dgate_up + n * 2 * H;
        Out* dup = dgate + H;
#pragma omp simd
        for (int64_t h = 0; h < H; h++) {
            const float g = to_float(gate[h]);
            dgate[h] = float_to<Out>(d[h] * to_float(up[h]) * silu_grad(g));
            dup[h] = float_to<Out>(d[h] * silu(g));
        }
    }
}

}  // namespace

void swiglu_forward(float* out, const float* gate_up, int64_t N, int64_t H) {
    forward_rows(out, gate_up, N, H);
}

void swiglu_forward(bf16* out, const float* gate_up, int64_t N, int64_t H) {
    forward_rows(out, gate_up, N, H);
}

void swiglu_forward(bf16* out, const bf16* gate_up, int64_t N, int64_t H) {
    forward_rows(out, gate_up, N, H);
}

void swiglu_forward(bf16* out, bf16* gate_up_h, const float* gate_up, int64_t N, int64_t H) {
    forward_rounding_rows(out, gate_up_h, gate_up, N, H);
}

void swiglu_backward(float* dgate_up, const float* dout, const float* gate_up, int64_t N,
                     int64_t H) {
    backward_rows(dgate_up, dout, gate_up, N, H);
}

void swiglu_backward(bf16* dgate_up, const float* dout, const float* gate_up, int64_t N,
                     int64_t H) {
    backward_rows(dgate_up, dout, gate_up, N, H);
}

void swiglu_backward(bf16* dgate_up, const float* dout, const bf16* gate_up, int64_t N, int64_t H) {
    backward_rows(dgate_up, dout, gate_up, N, H);
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
