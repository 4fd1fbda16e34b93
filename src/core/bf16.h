// bfloat16: the upper 16 bits of a float (8 exponent bits, 7 mantissa bits), the number
// format of mixed precision's GEMM inputs and of bf16 optimizer moments; scalar conversions
// (kernels/bf16.h has the multi-threaded buffer conversion).
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

// Stochastic rounding: x's magnitude rounds up with probability equal to its distance from
// the bf16 below it (in units of bf16's step), so the rounding error averages to zero. An
// Adam moment stored in bf16 needs this: with β2 = 0.999 each step moves v by 0.1% of its gap
// to g², and once that is under half a bf16 step (0.2-0.4% of v) rounding to nearest drops it
// every time. noise: 16 uniform random bits (the upper 16 are ignored). NaN stays NaN; the
// largest floats may round to inf, as their upper neighbour is.
inline bf16 to_bf16_stochastic(float x, uint32_t noise) {
    const uint32_t u = std::bit_cast<uint32_t>(x);
    const bool nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
    return static_cast<bf16>(nan ? ((u >> 16) | 0x40u) : (u + (noise & 0xFFFFu)) >> 16);
}

// 32 well-mixed bits for the element `index` of a buffer at optimizer step `step`: a
// counter-based generator, so that rounding depends on neither the thread count nor how ranks
// shard the buffer, and a resumed run draws the same bits. (A multiply, then MurmurHash3's
// finaliser: every input bit reaches every output bit.)
inline uint32_t rounding_noise(uint32_t index, uint32_t step_key) {
    uint32_t h = index * 0x9E3779B1u ^ step_key;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

// The step's key for rounding_noise: distinct steps give unrelated streams.
inline uint32_t rounding_step_key(int64_t step) {
    return rounding_noise(static_cast<uint32_t>(step) ^ static_cast<uint32_t>(step >> 32), 0x5BD1E995u);
}

// x read as float: itself, or widened from bf16 (kernels templated on an input's precision).
inline float to_float(float x) { return x; }
inline float to_float(bf16 x) { return from_bf16(x); }

// x stored as T: itself for float, rounded for bf16 (kernels templated on an output's precision).
template <class T>
inline T float_to(float x) {
    if constexpr (std::is_same_v<T, float>) {
        return x;
    } else {
        return to_bf16(x);
    }
}

}  // namespace lmforge
