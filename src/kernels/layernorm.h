// LayerNorm over the last dimension, as torch.nn.LayerNorm (biased variance, eps inside the
// square root): https://pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html
// eps is the model's: GPT-2 uses 1e-5, BERT 1e-12. Backward needs none (it reads rstd).
#pragma once

#include <cstdint>

#include "kernels/bf16.h"

namespace lmforge::kernels {

inline constexpr float kLayerNormEps = 1e-5f;

// out, inp: (N, C); weight, bias: (C); mean, rstd: (N), saved for backward.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int64_t C,
                       float eps = kLayerNormEps);
// The same with the output in bfloat16, in mixed precision, where it only feeds a GEMM.
void layernorm_forward(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int64_t C, float eps = kLayerNormEps);

// A residual add and the layernorm after it in one pass over each row (the row stays in cache
// between the two): res (N, C) = a + b, then out = layernorm(res). res may alias a or b.
void residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int64_t N,
                                int64_t C, float eps = kLayerNormEps);
void residual_layernorm_forward(float* res, bf16* out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int64_t N,
                                int64_t C, float eps = kLayerNormEps);

// Accumulates (+=) into dinp (N, C), dweight (C) and dbias (C). dout: (N, C).
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int64_t N, int64_t C);

}  // namespace lmforge::kernels
