// IEEE half precision (fp16) as files store it (safetensors F16): scalar conversions. (Training's
// fp16 GEMM inputs round whole buffers: kernels/fp16.h.)
#pragma once

#include <bit>
#include <cstdint>

namespace lmforge {

using f16 = uint16_t;  // storage only: arithmetic happens in float

// Exact: subnormals, infinities and NaN included.
inline float from_f16(f16 h) { return static_cast<float>(std::bit_cast<_Float16>(h)); }

// Round to nearest, ties to even; beyond 65504 (from 65520) ±infinity; NaN stays NaN.
inline f16 to_f16(float x) { return std::bit_cast<f16>(static_cast<_Float16>(x)); }

}  // namespace lmforge
