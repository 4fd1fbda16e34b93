// IEEE half precision (fp16) for train.precision = "fp16": GEMM inputs are rounded to fp16 —
// 11 significant bits, largest finite 65504, smaller than 6.1e-5 subnormal, smaller than
// 6e-8 zero — and multiplied with fp32 accumulation. Where the CPU has F16C (every kernel
// level above the baseline) the conversions are its instructions.
#pragma once

#include <cstdint>

namespace lmforge::kernels {

// out (n) = float(fp16(in (n))): rounded to nearest even; beyond fp16's range ±infinity, as an
// fp16 conversion overflows. out may alias in. Multi-threaded.
void round_to_fp16(float* out, const float* in, int64_t n);

// out (n) = fp16(in (n)) as IEEE half-precision bits, rounded the same way: the operands of a
// GEMM that multiplies fp16 itself (backend::Gemm::run_f16). Multi-threaded.
void to_fp16(uint16_t* out, const float* in, int64_t n);

}  // namespace lmforge::kernels
