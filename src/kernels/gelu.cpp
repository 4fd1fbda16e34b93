#include "kernels/gelu.h"

#include <omp.h>

#include <type_traits>

#include "backend/threads.h"
#include "kernels/bf16.h"
#include "kernels/fast_math.h"
#include "kernels/matmul.h"
#include "kernels/prefetch.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;

// 1 + erf(x/√2) = 2Φ(x) from erfc(|x|/√2), so the left tail (where it is small) is not a
// difference.
#pragma omp declare simd notinbranch
inline float one_plus_erf(float x) {
    const float e = fast_erfc_over_sqrt2(x < 0.0f ? -x : x);
    return x < 0.0f ? e : 2.0f - e;
}

// The tanh form through the logistic function: 0.5·(1 + tanh(u)) = σ(2u) = 1 / (1 + e^(−2u)).
// One exp and one division, no sign handling, and no 1 + tanh(u), a difference that loses the
// left tail (off by 30% at x = −5, 0 from x = −6).
#pragma omp declare simd notinbranch
inline float minus_2u(float x) { return -2.0f * kSqrt2OverPi * (x + kCubic * x * x * x); }

// Far left, where e^(−2u) overflows, GELU is x·0 = ±0, as it should be (for finite x); far right
// e^(−2u) underflows and 1 + it is 1: x. Selected on the quotient (fast_exp_finite).
#pragma omp declare simd notinbranch
inline float gelu_tanh(float x) {
    const float m = minus_2u(x);
    const float y = x / (1.0f + fast_exp_finite(m));
    return m > kExpOverflow ? x * 0.0f : y;
}

// Beyond |−2u| = 80 (|x| above 9.67) the gradient is 0 or 1 in float, and there it is selected
// outright: e^(−2u) overflows on the left, and 2x·du, which grows like x³, would make inf·0 of
// the terms it multiplies.
constexpr float kTail = 80.0f;

// d gelu(x) / dx = σ + 2x·σ·(1 − σ)·du/dx, with 1 − σ = e·σ (no difference near σ = 1).
// e is finite throughout (fast_exp_finite: one division), and the tails are selected anyway.
#pragma omp declare simd notinbranch
inline float gelu_tanh_grad(float x) {
    const float m = minus_2u(x);
    const float e = fast_exp_finite(m);
    const float sigma = 1.0f / (1.0f + e);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
    const float grad = sigma + 2.0f * x * du * e * sigma * sigma;
    return m >= kTail ? 0.0f : (m <= -kTail ? 1.0f : grad);
}

// out[i] = f(inp[i]), each thread's range asked for two chunks ahead: from memory, as in a
// training step, the loop otherwise waits on each line (figures in kernels/prefetch.h).
template <class Out, class In, class F>
void forward_sweep(Out* out, const In* inp, int64_t n, const F& f) {
#pragma omp parallel
    {
        const auto [i0, i1] = backend::thread_slice(n, omp_get_thread_num(), omp_get_num_threads());
        sweep_with_prefetch(
            i0, i1,
            [out, inp](int64_t b, int64_t e) {
                prefetch_lines(inp + b, e - b);
                prefetch_lines(out + b, e - b);
            },
            [out, inp, &f](int64_t b, int64_t e) {
#pragma omp simd
                for (int64_t i = b; i < e; i++) out[i] = float_to<Out>(f(to_float(inp[i])));
            });
    }
}

template <class Out, class In>
void forward_tanh(Out* out, const In* inp, int64_t n) {
    forward_sweep(out, inp, n, [](float x) { return gelu_tanh(x); });
}

template <class In>
void backward_tanh_bf16_bias(bf16* dinp_h, float* dbias, const float* dout, const In* inp, int64_t rows,
                             int64_t cols) {
#pragma omp parallel
    {
        const auto [c0, c1] = backend::thread_slice(cols, omp_get_thread_num(), omp_get_num_threads());
        to_bf16_with_column_sums(dinp_h, dbias, rows, cols, c0, c1,
                                 [dout, inp](int64_t i) { return gelu_tanh_grad(to_float(inp[i])) * dout[i]; });
    }
}

template <class Out, class In>
void forward_erf(Out* out, const In* inp, int64_t n) {
    forward_sweep(out, inp, n, [](float x) { return 0.5f * x * one_plus_erf(x); });
}

template <class In>
void backward_erf(float* dinp, const float* dout, const In* inp, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float x = to_float(inp[i]);
        const float grad = 0.5f * one_plus_erf(x) + x * kInvSqrt2Pi * fast_exp_neg_half_square(x);
        dinp[i] = grad * dout[i];
    }
}

}  // namespace

void gelu_forward(float* out, const float* inp, int64_t n) { forward_tanh(out, inp, n); }

void gelu_forward(bf16* out, const float* inp, int64_t n) { forward_tanh(out, inp, n); }

void gelu_forward(bf16* out, const bf16* inp, int64_t n) { forward_tanh(out, inp, n); }

void gelu_backward(float* dinp, const float* dout, const float* inp, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) dinp[i] = gelu_tanh_grad(inp[i]) * dout[i];
}

void gelu_backward_bf16_bias(bf16* dinp_h, float* dbias, const float* dout, const float* inp, int64_t rows,
                             int64_t cols) {
    backward_tanh_bf16_bias(dinp_h, dbias, dout, inp, rows, cols);
}

void gelu_backward_bf16_bias(bf16* dinp_h, float* dbias, const float* dout, const bf16* inp, int64_t rows,
                             int64_t cols) {
    backward_tanh_bf16_bias(dinp_h, dbias, dout, inp, rows, cols);
}

void gelu_erf_forward(float* out, const float* inp, int64_t n) { forward_erf(out, inp, n); }

void gelu_erf_forward(bf16* out, const float* inp, int64_t n) { forward_erf(out, inp, n); }

void gelu_erf_forward(bf16* out, const bf16* inp, int64_t n) { forward_erf(out, inp, n); }

void gelu_erf_backward(float* dinp, const float* dout, const float* inp, int64_t n) {
    backward_erf(dinp, dout, inp, n);
}

void gelu_erf_backward(float* dinp, const float* dout, const bf16* inp, int64_t n) {
    backward_erf(dinp, dout, inp, n);
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
