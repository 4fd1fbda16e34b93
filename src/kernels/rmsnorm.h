// RMSNorm over the last dimension, as transformers' LlamaRMSNorm (in fp32):
//   y = weight · (x · rstd),  rstd = 1/sqrt(mean(x²) + eps)
// https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/modeling_llama.py
// No mean is subtracted and there is no bias: that is the difference from kernels/layernorm.h.
// eps is the model's (Llama's rms_norm_eps, 1e-5 or 1e-6); backward needs none (it reads rstd).
#pragma once

#include <cstdint>

#include "kernels/bf16.h"

namespace lmforge::kernels {

// out, inp: (N, C); weight: (C); rstd: (N), saved for backward. out may not alias inp.
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps);
// The same with the output in bfloat16, in mixed precision, where it only feeds a GEMM.
void rmsnorm_forward(bf16* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps);

// A residual add and the RMSNorm after it in one pass over each row (the row stays in cache
// between the two): res (N, C) = a + b, then out = rmsnorm(res). res may alias a or b.
void residual_rmsnorm_forward(float* res, float* out, float* rstd, const float* a, const float* b,
                              const float* weight, int64_t N, int64_t C, float eps);
void residual_rmsnorm_forward(float* res, bf16* out, float* rstd, const float* a, const float* b,
                              const float* weight, int64_t N, int64_t C, float eps);

// Accumulates (+=) into dinp (N, C) and dweight (C). dout, inp: (N, C); rstd: (N), as forward
// saved it. dweight's sums over rows do not depend on the thread count. dweight null: a frozen
// gain (LoRA's base), not summed.
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C);
// The same where dinp is final after this pass and the layer below's backward GEMMs read it in
// bf16 (the residual stream's gradient, in mixed precision): also writes dinp_h (N, C) =
// bf16(dinp), each row as it is finished.
void rmsnorm_backward(float* dinp, bf16* dinp_h, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C);

}  // namespace lmforge::kernels
