#include "kernels/relu.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

void relu_forward(float* out, const float* inp, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

void relu_backward(float* dinp, const float* dout, const float* out, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) dinp[i] = out[i] > 0.0f ? dout[i] : 0.0f;
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
