#include "kernels/matmul.h"

#include <omp.h>

#include "backend/threads.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

void matmul_forward(backend::Gemm& gemm, float* out, const float* inp, const float* weight,
                    const float* bias, int64_t N, int64_t C, int64_t OC) {
    gemm.run({.M = N, .N = OC, .K = C}, inp, weight, out, bias);
}

void matmul_backward(backend::Gemm& gemm, float* dinp, float* dweight, float* dbias,
                     const float* dout, const float* inp, const float* weight, int64_t N,
                     int64_t C, int64_t OC, WeightGrad mode) {
    if (dinp != nullptr) {
        gemm.run({.M = N, .N = C, .K = OC, .trans_b = true}, dout, weight,
                 dinp);
    }
    gemm.run({.M = C, .N = OC, .K = N, .trans_a = true, .accumulate = mode == WeightGrad::Accumulate},
             inp, dout, dweight);
    if (dbias != nullptr) bias_backward(dbias, dout, N, OC);
}

void matmul_forward_bf16(backend::Gemm& gemm, float* out, const uint16_t* inp, const uint16_t* weight,
                         const float* bias, int64_t N, int64_t C, int64_t OC) {
    gemm.run_bf16({.M = N, .N = OC, .K = C}, inp, weight, out, bias);
}

void matmul_forward_bf16(backend::Gemm& gemm, bf16* out, const uint16_t* inp, const uint16_t* weight,
                         const float* bias, int64_t N, int64_t C, int64_t OC) {
    gemm.run_bf16({.M = N, .N = OC, .K = C}, inp, weight, out, bias);
}

void matmul_backward_bf16(backend::Gemm& gemm, float* dinp, float* dweight, float* dbias,
                          const float* dout, const uint16_t* dout_bf16, const uint16_t* inp,
                          const uint16_t* weight, int64_t N, int64_t C, int64_t OC, WeightGrad mode) {
    if (dinp != nullptr) {
        gemm.run_bf16({.M = N, .N = C, .K = OC, .trans_b = true}, dout_bf16, weight, dinp);
    }
    gemm.run_bf16({.M = C, .N = OC, .K = N, .trans_a = true, .accumulate = mode == WeightGrad::Accumulate},
                  inp, dout_bf16, dweight);
    if (dbias != nullptr) bias_backward(dbias, dout, N, OC);
}

void bias_backward(float* dbias, const float* dout, int64_t N, int64_t OC) {
#pragma omp parallel
    {
        // Not a structured binding: clang cannot capture one in the `omp simd` loop below.
        const backend::Range slice = backend::thread_slice(OC, omp_get_thread_num(), omp_get_num_threads());
        const long c0 = slice.begin, c1 = slice.end;
        for (int64_t n = 0; n < N; n++) {
            const float* d = dout + n * OC;
#pragma omp simd
            for (int64_t c = c0; c < c1; c++) dbias[c] += d[c];
        }
    }
}

void to_bf16_with_bias_backward(uint16_t* dout_h, float* dbias, const float* dout, int64_t N, int64_t OC) {
    if (dbias == nullptr) {
        to_bf16(dout_h, dout, N * OC);
        return;
    }
#pragma omp parallel
    {
        const auto [c0, c1] = backend::thread_slice(OC, omp_get_thread_num(), omp_get_num_threads());
        to_bf16_with_column_sums(dout_h, dbias, N, OC, c0, c1, [dout](int64_t i) { return dout[i]; });
    }
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
