// Causal multi-head self-attention on a fused QKV activation, tiled with an online softmax:
// no (T, T) matrix is ever stored, only one log-sum-exp per row, so memory per layer grows
// as T, not T². Backward recomputes the probabilities from the saved log-sum-exp
// (FlashAttention-2: https://arxiv.org/abs/2307.08691). Derivation: docs/derivations/attention.md.
#pragma once

#include <cstdint>

namespace lmforge::kernels {

// qkv (B, T, 3C): q, k, v side by side, each C wide; head h owns channels [h·HS, (h+1)·HS)
// of each, HS = C / NH. out (B, T, C): heads side by side.
// lse (B, NH, T): log-sum-exp of row t's scaled scores over keys 0..t, saved for backward.
void attention_forward(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                       int64_t C, int64_t NH);

// Writes (=) dqkv (B, T, 3C): every element is overwritten, so it needs no zeroing. dout, out: (B, T, C); lse and qkv as saved.
void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int64_t B, int64_t T, int64_t C, int64_t NH);

}  // namespace lmforge::kernels
