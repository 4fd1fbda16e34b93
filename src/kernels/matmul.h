// A linear layer in Hugging Face GPT-2's Conv1D layout: the weight is stored (in, out), so
// checkpoints move between lmforge and Hugging Face without transposing.
#pragma once

#include <cstdint>

#include <omp.h>

#include "backend/gemm.h"
#include "backend/threads.h"
#include "kernels/bf16.h"

namespace lmforge::kernels {

// out (N, OC) = inp (N, C) · weight (C, OC) + bias (OC). bias may be null.
void matmul_forward(backend::Gemm& gemm, float* out, const float* inp, const float* weight,
                    const float* bias, int64_t N, int64_t C, int64_t OC);

// How backward treats the weight gradient: add to it, or overwrite it. Overwriting lets a
// step's first backward (Model::forward_backward without accumulate) skip zeroing the largest
// gradients.
enum class WeightGrad { Accumulate, Overwrite };

// dinp (N, C) = dout · weightᵀ (written, so it needs no zeroing); dbias (OC) += column sums
// of dout; dweight (C, OC) += inpᵀ · dout, or = with WeightGrad::Overwrite. dinp and dbias
// may be null (not wanted).
void matmul_backward(backend::Gemm& gemm, float* dinp, float* dweight, float* dbias,
                     const float* dout, const float* inp, const float* weight, int64_t N,
                     int64_t C, int64_t OC, WeightGrad mode = WeightGrad::Accumulate);

// Mixed precision: the same with inp, weight and (for backward) dout in bfloat16; products
// accumulate in fp32; out, dinp, dweight and dbias are fp32 (dbias from dout's fp32 copy).
void matmul_forward_bf16(backend::Gemm& gemm, float* out, const uint16_t* inp, const uint16_t* weight,
                         const float* bias, int64_t N, int64_t C, int64_t OC);
// The same with out in bfloat16 too (the fp32 sum plus bias, rounded once): an output kept
// only as the input of bf16 work.
void matmul_forward_bf16(backend::Gemm& gemm, bf16* out, const uint16_t* inp, const uint16_t* weight,
                         const float* bias, int64_t N, int64_t C, int64_t OC);
void matmul_backward_bf16(backend::Gemm& gemm, float* dinp, float* dweight, float* dbias,
                          const float* dout, const uint16_t* dout_bf16, const uint16_t* inp,
                          const uint16_t* weight, int64_t N, int64_t C, int64_t OC,
                          WeightGrad mode = WeightGrad::Accumulate);

// dbias (OC) += sum over rows of dout (N, OC). Each thread owns a slice of the columns.
void bias_backward(float* dbias, const float* dout, int64_t N, int64_t OC);

// Mixed precision, before a layer's backward GEMMs: dout_h (N, OC) = bf16(dout) and, if dbias
// is not null, bias_backward's sums (in its order), in one pass over dout instead of two.
void to_bf16_with_bias_backward(uint16_t* dout_h, float* dbias, const float* dout, int64_t N, int64_t OC);

// The pass both of those fused passes make (this one and gelu_backward_bf16_bias), by one thread
// of a parallel region over its slice [c0, c1) of the columns: out_h (N, OC) = bf16(g) and
// dbias (OC) += g's fp32 column sums, g = grad(n · OC + c), rows in order, as bias_backward
// sums them, so the sums are bit for bit its. The parallel region is the caller's, so that all
// of this is inlined into code of the caller's instruction-set level (kernels/isa_begin.h): a
// region here would be outlined where this header is compiled, at the baseline, and ran GELU's
// fused backward 4.5x slower on AVX-512 than a native build.
template <class Grad>
[[gnu::always_inline]] inline void to_bf16_with_column_sums(uint16_t* out_h, float* dbias, int64_t N, int64_t OC,
                                                          int64_t c0, int64_t c1, const Grad& grad) {
    for (int64_t n = 0; n < N; n++) {
#pragma omp simd
        for (int64_t c = c0; c < c1; c++) {
            const float g = grad(n * OC + c);
            out_h[n * OC + c] = lmforge::to_bf16(g);
            dbias[c] += g;
        }
    }
}

}  // namespace lmforge::kernels
