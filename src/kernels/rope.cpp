// The tables are built once per forward and are small (T × HS/2): their arithmetic copies
// transformers' fp32 steps, with no thought for speed. The rotation is the hot part: rows go
// to threads whole, and within a head the two halves are read side by side.
#include "kernels/rope.h"

#include <cmath>
#include <numbers>
#include <type_traits>

#include "core/bf16.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

// a·b rounded to fp32 by itself, as torch's separate mul and add kernels round it: the avx2 and
// avx512 builds would otherwise fuse it with the sum that follows into one FMA (one rounding),
// and the frequency would differ from transformers' by an ulp, which a position of 10⁵ turns
// into 10⁻³ rad. (Setup code: the store costs nothing.)
inline float product(float a, float b) {
    volatile float p = a * b;
    return p;
}

// Llama 3's rule for one frequency f, in _compute_llama3_parameters's fp32 operations: a
// Python number meeting an fp32 tensor is rounded to fp32 first, `number / tensor` is torch's
// reciprocal(tensor) · number, and a tensor divided by a number is a true division.
float llama3_scaled(float f, const Llama3RopeScaling& s) {
    const float factor = static_cast<float>(s.factor), low = static_cast<float>(s.low_freq_factor);
    const auto original_max = static_cast<double>(s.original_max_position);
    const auto low_freq_wavelen = static_cast<float>(original_max / s.low_freq_factor);
    const auto high_freq_wavelen = static_cast<float>(original_max / s.high_freq_factor);
    const float wavelen = (1.0f / f) * static_cast<float>(2 * std::numbers::pi);
    if (wavelen > low_freq_wavelen) return f / factor;
    if (wavelen < high_freq_wavelen) return f;
    const float smooth = (product(1.0f / wavelen, static_cast<float>(original_max)) - low) /
                         static_cast<float>(s.high_freq_factor - s.low_freq_factor);
    return (1.0f - smooth) * f / factor + product(smooth, f);
}

}  // namespace

void rope_inv_freq(float* inv_freq, int64_t HS, double theta, const Llama3RopeScaling* scaling) {
    // 1.0 / (theta ** (arange(0, HS, 2).float() / HS)): the exponent rounds to fp32 first.
    const auto base = static_cast<double>(static_cast<float>(theta));
    for (int64_t i = 0; i < HS / 2; i++) {
        const float e = static_cast<float>(2 * i) / static_cast<float>(HS);
        const auto power = static_cast<float>(std::pow(base, static_cast<double>(e)));
        const float f = 1.0f / power;
        inv_freq[i] = scaling != nullptr ? llama3_scaled(f, *scaling) : f;
    }
}

void rope_tables(float* cos, float* sin, const float* inv_freq, int64_t HS, int64_t pos0,
                 int64_t T) {
    const int64_t h = HS / 2;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; t++) {
        const auto position = static_cast<float>(pos0 + t);
        for (int64_t i = 0; i < h; i++) {
            // The fp32 angle, as transformers has it; its cosine and sine in double, rounded once.
            const auto angle = static_cast<double>(position * inv_freq[i]);
            cos[t * h + i] = static_cast<float>(std::cos(angle));
            sin[t * h + i] = static_cast<float>(std::sin(angle));
        }
    }
}

namespace {

// Rotates each head of the first `heads` of every row of x by the angle (sign +1) or its
// negative (sign −1, the transpose) into out, which is x itself (fp32, in place) or a bf16 copy,
// which also takes the rest of each row.
template <int Sign, class Out>
void rotate_rows(Out* out, const float* x, const float* cos, const float* sin, int64_t B, int64_t T,
                 int64_t stride, int64_t heads, int64_t HS) {
    const int64_t h = HS / 2;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < B * T; r++) {
        const float* c = cos + (r % T) * h;
        const float* s = sin + (r % T) * h;
        for (int64_t head = 0; head < heads; head++) {
            const float* lo = x + r * stride + head * HS;
            const float* hi = lo + h;
            Out* out_lo = out + r * stride + head * HS;
            Out* out_hi = out_lo + h;
#pragma omp simd
            for (int64_t i = 0; i < h; i++) {
                // q·cos + rotate_half(q)·sin, rotate_half(q) = (−q[h:], q[:h]): the same
                // products and sum as transformers.
                const float a = lo[i], b = hi[i];
                if constexpr (Sign > 0) {
                    out_lo[i] = float_to<Out>(a * c[i] - b * s[i]);
                    out_hi[i] = float_to<Out>(b * c[i] + a * s[i]);
                } else {
                    out_lo[i] = float_to<Out>(a * c[i] + b * s[i]);
                    out_hi[i] = float_to<Out>(b * c[i] - a * s[i]);
                }
            }
        }
        if constexpr (!std::is_same_v<Out, float>) {
#pragma omp simd
            for (int64_t j = heads * HS; j < stride; j++) out[r * stride + j] = float_to<Out>(x[r * stride + j]);
        }
    }
}

}  // namespace

void rope_forward(float* x, const float* cos, const float* sin, int64_t B, int64_t T,
                  int64_t stride, int64_t heads, int64_t HS) {
    rotate_rows<1>(x, x, cos, sin, B, T, stride, heads, HS);
}

void rope_forward(bf16* out, const float* x, const float* cos, const float* sin, int64_t B, int64_t T,
                  int64_t stride, int64_t heads, int64_t HS) {
    rotate_rows<1>(out, x, cos, sin, B, T, stride, heads, HS);
}

void rope_backward(float* dx, const float* cos, const float* sin, int64_t B, int64_t T,
                   int64_t stride, int64_t heads, int64_t HS) {
    rotate_rows<-1>(dx, dx, cos, sin, B, T, stride, heads, HS);
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
