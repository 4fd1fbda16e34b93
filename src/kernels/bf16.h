// bfloat16 buffers: GEMM inputs in mixed precision are bf16 (fp32 accumulation); everything
// else stays fp32. The scalar conversions are core/bf16.h's.
#pragma once

#include <cstdint>

#include "core/bf16.h"

namespace lmforge::kernels {

// out (n) = bf16(in (n)). Multi-threaded.
void to_bf16(bf16* out, const float* in, int64_t n);

// acc (n) = bf16(acc + in), the sum taken in fp32 and rounded once. Multi-threaded.
void add_to_bf16(bf16* acc, const float* in, int64_t n);

}  // namespace lmforge::kernels
