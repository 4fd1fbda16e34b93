// bfloat16: the upper 16 bits of a float (8 exponent bits, 7 mantissa bits). GEMM inputs in
// mixed precision are bf16 (fp32 accumulation); everything else stays fp32.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace lmforge {

using bf16 = uint16_t;  // storage only: arithmetic happens in float

// Round to nearest, ties to even; NaN stays NaN (quiet). Branch-free, so loops vectorise.
inline bf16 to_bf16(float x) {
    const uint32_t u = std::bit_cast<uint32_t>(x);
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const bool nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
    return static_cast<bf16>(nan ? ((u >> 16) | 0x40u) : rounded);
}

inline float from_bf16(bf16 x) { return std::bit_cast<float>(static_cast<uint32_t>(x) << 16); }

// x stored as T: itself for float, rounded for bf16 (kernels templated on an output's precision).
template <class T>
inline T float_to(float x) {
    if constexpr (std::is_same_v<T, float>) {
        return x;
    } else {
        return to_bf16(x);
    }
}

namespace kernels {

// out (n) = bf16(in (n)). Multi-threaded.
void to_bf16(bf16* out, const float* in, int64_t n);

}  // namespace kernels
}  // namespace lmforge
