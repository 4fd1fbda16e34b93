// A linear layer in torch.nn.Linear's layout: the weight is stored (OC, C), out by in, as
// Hugging Face BERT stores it, so its checkpoints load without transposing. (GPT-2's Conv1D
// layout, (C, OC), is kernels/matmul.h.)
#pragma once

#include <cstdint>

#include "backend/gemm.h"
#include "kernels/matmul.h"

namespace lmforge::kernels {

// out (N, OC) = inp (N, C) · weight (OC, C)ᵀ + bias (OC). bias may be null.
void linear_forward(backend::Gemm& gemm, float* out, const float* inp, const float* weight,
                    const float* bias, int64_t N, int64_t C, int64_t OC);

// dinp (N, C) = dout · weight (written, so it needs no zeroing); dbias (OC) += column sums
// of dout; dweight (OC, C) += doutᵀ · inp, or = with WeightGrad::Overwrite. dinp, dweight and
// dbias may be null (not wanted; a frozen weight, LoRA's base, skips its GEMM).
void linear_backward(backend::Gemm& gemm, float* dinp, float* dweight, float* dbias,
                     const float* dout, const float* inp, const float* weight, int64_t N,
                     int64_t C, int64_t OC, WeightGrad mode = WeightGrad::Accumulate);

// Mixed precision: the same with inp, weight and (for backward) dout in bfloat16; products
// accumulate in fp32; out, dinp, dweight and dbias are fp32 (dbias from dout's fp32 copy).
void linear_forward_bf16(backend::Gemm& gemm, float* out, const uint16_t* inp, const uint16_t* weight,
                         const float* bias, int64_t N, int64_t C, int64_t OC);
// The same with out in bfloat16 too (the fp32 sum plus bias, rounded once): an output kept
// only as the input of bf16 work.
void linear_forward_bf16(backend::Gemm& gemm, bf16* out, const uint16_t* inp, const uint16_t* weight,
                         const float* bias, int64_t N, int64_t C, int64_t OC);
void linear_backward_bf16(backend::Gemm& gemm, float* dinp, float* dweight, float* dbias,
                          const float* dout, const uint16_t* dout_bf16, const uint16_t* inp,
                          const uint16_t* weight, int64_t N, int64_t C, int64_t OC,
                          WeightGrad mode = WeightGrad::Accumulate);

}  // namespace lmforge::kernels
