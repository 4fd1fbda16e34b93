#include "kernels/bf16.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

void to_bf16(bf16* out, const float* in, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = lmforge::to_bf16(in[i]);
}

void add_to_bf16(bf16* acc, const float* in, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) acc[i] = lmforge::to_bf16(from_bf16(acc[i]) + in[i]);
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
