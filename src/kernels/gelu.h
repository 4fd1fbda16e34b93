// GELU in GPT-2's tanh form, as torch.nn.functional.gelu(x, approximate="tanh"):
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// and in its exact erf form, BERT's "gelu" (torch.nn.functional.gelu's default):
//   gelu(x) = 0.5 x (1 + erf(x / sqrt(2)))
#pragma once

#include <cstdint>

#include "kernels/bf16.h"

namespace lmforge::kernels {

// out, inp: (n). out may alias inp.
void gelu_forward(float* out, const float* inp, int64_t n);
// The same with the output in bfloat16, in mixed precision, where it only feeds a GEMM; and
// with the input in bfloat16 too, where mixed precision keeps the pre-activation so.
void gelu_forward(bf16* out, const float* inp, int64_t n);
void gelu_forward(bf16* out, const bf16* inp, int64_t n);

// Writes (=): dinp = dout * gelu'(inp). All (n).
void gelu_backward(float* dinp, const float* dout, const float* inp, int64_t n);

// Mixed precision, for the GEMMs of c_fc's backward, which read the gradient in bf16: writes
// (=) dinp_h (rows, cols) = bf16(dout * gelu'(inp)) and adds (+=) its fp32 column sums to
// dbias (cols), in one pass where gelu_backward, to_bf16 and bias_backward take three. The
// same values, summed in the same order: bit for bit what the three passes give.
void gelu_backward_bf16_bias(bf16* dinp_h, float* dbias, const float* dout, const float* inp, int64_t rows,
                             int64_t cols);
// The same from the pre-activation kept in bf16.
void gelu_backward_bf16_bias(bf16* dinp_h, float* dbias, const float* dout, const bf16* inp, int64_t rows,
                             int64_t cols);

// The erf form, with the same shapes and semantics. About 1e-6 relative to the exact function,
// the left tail included (fast_erfc_over_sqrt2).
void gelu_erf_forward(float* out, const float* inp, int64_t n);
void gelu_erf_forward(bf16* out, const float* inp, int64_t n);
void gelu_erf_forward(bf16* out, const bf16* inp, int64_t n);

// Writes (=): dinp = dout * (0.5 (1 + erf(x/√2)) + x e^(−x²/2) / √(2π)), x = inp. All (n).
void gelu_erf_backward(float* dinp, const float* dout, const float* inp, int64_t n);
void gelu_erf_backward(float* dinp, const float* dout, const bf16* inp, int64_t n);

}  // namespace lmforge::kernels
