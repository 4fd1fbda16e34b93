#include "kernels/linear.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

void linear_forward(backend::Gemm& gemm, float* out, const float* inp, const float* weight,
                    const float* bias, int64_t N, int64_t C, int64_t OC) {
    gemm.run({.M = N, .N = OC, .K = C, .trans_b = true}, inp, weight, out, bias);
}

void linear_backward(backend::Gemm& gemm, float* dinp, float* dweight, float* dbias,
                     const float* dout, const float* inp, const float* weight, int64_t N,
                     int64_t C, int64_t OC, WeightGrad mode) {
    if (dinp != nullptr) gemm.run({.M = N, .N = C, .K = OC}, dout, weight, dinp);
    if (dweight != nullptr) {
        gemm.run({.M = OC, .N = C, .K = N, .trans_a = true, .accumulate = mode == WeightGrad::Accumulate}, dout, inp,
                 dweight);
    }
    if (dbias != nullptr) bias_backward(dbias, dout, N, OC);
}

void linear_forward_bf16(backend::Gemm& gemm, float* out, const uint16_t* inp, const uint16_t* weight,
                         const float* bias, int64_t N, int64_t C, int64_t OC) {
    gemm.run_bf16({.M = N, .N = OC, .K = C, .trans_b = true}, inp, weight, out, bias);
}

void linear_forward_bf16(backend::Gemm& gemm, bf16* out, const uint16_t* inp, const uint16_t* weight,
                         const float* bias, int64_t N, int64_t C, int64_t OC) {
    gemm.run_bf16({.M = N, .N = OC, .K = C, .trans_b = true}, inp, weight, out, bias);
}

void linear_backward_bf16(backend::Gemm& gemm, float* dinp, float* dweight, float* dbias,
                          const float* dout, const uint16_t* dout_bf16, const uint16_t* inp,
                          const uint16_t* weight, int64_t N, int64_t C, int64_t OC, WeightGrad mode) {
    if (dinp != nullptr) gemm.run_bf16({.M = N, .N = C, .K = OC}, dout_bf16, weight, dinp);
    if (dweight != nullptr) {
        gemm.run_bf16({.M = OC, .N = C, .K = N, .trans_a = true, .accumulate = mode == WeightGrad::Accumulate},
                      dout_bf16, inp, dweight);
    }
    if (dbias != nullptr) bias_backward(dbias, dout, N, OC);
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
