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
// The same where dinp is final after this pass and the layer below's backward GEMMs read it
// in bf16 (a pre-LN block's residual stream, in mixed precision): also writes dinp_h (N, C) =
// bf16(dinp) and dinp_sums (C) = dinp's column sums (rows in order, as bias_backward sums them:
// the gradient of the bias of the projection below), in the same pass over the rows.
void layernorm_backward(float* dinp, bf16* dinp_h, float* dinp_sums, float* dweight, float* dbias,
                        const float* dout, const float* inp, const float* weight, const float* mean,
                        const float* rstd, int64_t N, int64_t C);

}  // namespace lmforge::kernels
