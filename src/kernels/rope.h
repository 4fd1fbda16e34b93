// Rotary position embeddings as transformers' Llama (LlamaRotaryEmbedding, apply_rotary_pos_emb:
// https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/modeling_llama.py),
// in its rotate_half convention: within a head of HS channels, channel i pairs with i + HS/2
// (not GPT-NeoX's interleaved 2i, 2i+1 of the original paper). The frequencies, optionally
// with Llama 3's rope_scaling (modeling_rope_utils.py, _compute_llama3_parameters), and the
// cos/sin tables follow transformers' fp32 arithmetic step by step, so that tables, and the
// logits after them, agree with it (tests/grad/rope_test.cpp, against its own numbers).
// Not here: the other rope_types (linear, dynamic, yarn, longrope) and partial rotary factors.
#pragma once

#include <cstdint>

#include "core/bf16.h"

namespace lmforge::kernels {

// Llama 3's rope_scaling {"rope_type": "llama3", factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings}.
struct Llama3RopeScaling {
    double factor = 8, low_freq_factor = 1, high_freq_factor = 4;
    int64_t original_max_position = 8192;
};

// inv_freq (HS/2): theta^(−2i/HS), then with scaling (non-null) Llama 3's per-frequency rule as
// _compute_llama3_parameters: wavelengths 2π/f above original_max/low_freq_factor are divided
// by factor, those below original_max/high_freq_factor kept, and in between
// (1 − s)·f/factor + s·f with s = (original_max/wavelength − low) / (high − low). Each step
// rounds to fp32 where transformers' does, 2i/HS included; the power itself is theta^e in
// double, rounded once (torch's fp32 pow is within an ulp of that). So the result is
// transformers' to an ulp, bit for bit in the tests' cases but where torch's pow is off; the
// formula evaluated in double and rounded at the end lies up to 26 ulp away (HS = 96, factor
// 32), and a position of 10⁵ turns each ulp of a frequency into up to 10⁻³ rad. HS even.
void rope_inv_freq(float* inv_freq, int64_t HS, double theta, const Llama3RopeScaling* scaling);

// cos, sin (T, HS/2) for positions pos0 .. pos0+T−1: angle = float(position) · inv_freq in
// fp32, as LlamaRotaryEmbedding.forward (an fp32 angle near 1000 rad is a multiple of 2⁻¹⁴;
// matching that rounding, not the exact angle, is what keeps logits equal), then cos and sin
// of that float, correctly rounded (torch's are within an ulp). Positions below 2²⁴.
void rope_tables(float* cos, float* sin, const float* inv_freq, int64_t HS, int64_t pos0,
                 int64_t T);

// In place: x has rows (B·T) of `stride` floats; the first `heads` heads of HS channels of each
// row are rotated, the rest of the row untouched (so q and k of a fused qkv row rotate in one
// call). Row b·T + t is at position t, i.e. table row t of cos, sin (T, HS/2); h = HS/2:
//   x'[i] = x[i]·cos − x[i+h]·sin,   x'[i+h] = x[i+h]·cos + x[i]·sin.
void rope_forward(float* x, const float* cos, const float* sin, int64_t B, int64_t T,
                  int64_t stride, int64_t heads, int64_t HS);

// Mixed precision: the same into out (B·T rows of `stride`) in bf16, x left as it is; the rest
// of each row is copied. So a model that keeps qkv in bf16 rotates and rounds it in one pass.
void rope_forward(bf16* out, const float* x, const float* cos, const float* sin, int64_t B, int64_t T,
                  int64_t stride, int64_t heads, int64_t HS);

// In place, the transpose: writes (=) dx rotated by −angle, the gradient with respect to the
// rotation's input. Same shapes as rope_forward.
void rope_backward(float* dx, const float* cos, const float* sin, int64_t B, int64_t T,
                   int64_t stride, int64_t heads, int64_t HS);

}  // namespace lmforge::kernels
