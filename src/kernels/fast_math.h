// exp and tanh written so that `#pragma omp simd` loops vectorise them: branch-free float
// arithmetic (selects become blends), no library calls. glibc's expf/tanhf only vectorise
// under -ffast-math, which we do not want for the whole build.
#pragma once

#include <bit>
#include <cstdint>

namespace lmforge::kernels {

// e^x to about 2 ulp; 0 below -87.3 (including -inf), +inf above 88.7. Cephes's method:
// e^x = 2^n · e^r with n = round(x / ln 2) and |r| <= ln(2)/2, e^r by a degree-7 polynomial.
#pragma omp declare simd notinbranch
inline float fast_exp(float x) {
    constexpr float kLog2e = 1.44269504088896341f;
    constexpr float kLn2Hi = 0.693359375f;         // ln 2 split in two so that n·ln2 is exact
    constexpr float kLn2Lo = -2.12194440e-4f;
    const float xc = x < -87.33654f ? -87.33654f : (x > 88.72283f ? 88.72283f : x);
    // Round to nearest by adding and removing 1.5·2^23 (floorf would block vectorisation).
    constexpr float kRound = 12582912.0f;
    const float n = (xc * kLog2e + kRound) - kRound;
    const float r = xc - n * kLn2Hi - n * kLn2Lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float er = p * r * r + r + 1.0f;
    const float two_n = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
    const float y = er * two_n;
    return x < -87.33654f ? 0.0f : (x > 88.72283f ? __builtin_inff() : y);
}

// tanh to about 1e-7 absolute: sign(u)·(1 − 2/(e^{2|u|} + 1)); exactly ±1 from |u| = 10
// (tanh(9) is still 0.99999994 in float, and GELU's backward scales 1 − tanh² by up to ~x³).
#pragma omp declare simd notinbranch
inline float fast_tanh(float u) {
    const float a = u < 0.0f ? -u : u;
    const float e = fast_exp(2.0f * (a < 10.0f ? a : 10.0f));
    const float t = 1.0f - 2.0f / (e + 1.0f);
    return u < 0.0f ? -t : t;
}

}  // namespace lmforge::kernels
