// exp, tanh and erfc written so that `#pragma omp simd` loops vectorise them: branch-free float
// arithmetic (selects become blends), no library calls (std::fma is one instruction on CPUs
// with FMA, which -march=native turns on). glibc's expf/tanhf only vectorise under
// -ffast-math, which we do not want for the whole build.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace lmforge::kernels {

// e^xc for xc in [−87.3, 88.7], to about 2 ulp. Cephes's method: e^x = 2^n · e^r with
// n = round(x / ln 2) and |r| <= ln(2)/2, e^r by a degree-7 polynomial.
#pragma omp declare simd notinbranch
inline float exp_in_range(float xc) {
    constexpr float kLog2e = 1.44269504088896341f;
    constexpr float kLn2Hi = 0.693359375f;         // ln 2 split in two so that n·ln2 is exact
    constexpr float kLn2Lo = -2.12194440e-4f;
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
    return er * two_n;
}

// Above this e^x is inf in float; below kExpUnderflow it is no longer a normal float.
inline constexpr float kExpOverflow = 88.72283f;
inline constexpr float kExpUnderflow = -87.33654f;

// e^x to about 2 ulp; 0 below -87.3 (including -inf), +inf above 88.7; NaN stays NaN.
#pragma omp declare simd notinbranch
inline float fast_exp(float x) {
    const float xc = x < kExpUnderflow ? kExpUnderflow : (x > kExpOverflow ? kExpOverflow : x);
    const float y = exp_in_range(xc);
    return x < kExpUnderflow ? 0.0f : (x > kExpOverflow ? __builtin_inff() : y);
}

// e^x where x cannot pass 88.7: a softmax's x − max, or x − log-sum-exp (0 at most, up to
// rounding). To about 2 ulp; 0 below −87.3 (−∞ included); NaN stays NaN. Without fast_exp's
// test for overflow, GCC vectorises it as one compare and a masked multiply, where fast_exp
// takes four compares and six selects.
#pragma omp declare simd notinbranch
inline float fast_exp_nonpositive(float x) {
    const float y = exp_in_range(x < kExpUnderflow ? kExpUnderflow : x);
    return x < kExpUnderflow ? 0.0f : y;
}

// e^x to about 2 ulp from x = −87.28 to 88.72, and outside that the value at the nearer end:
// finite and positive (NaN stays NaN), for a divisor. fast_exp's selects would sit inside the
// division, and GCC then divided once for each of their constant arms: three vdivps where one
// does (GELU's forward over config C's 6.3M activations: 1.57 -> 1.39 ms, its fp32 gradient
// 1.65 -> 1.49, Zen 5, 2 threads). So this clamp has no constant arm (its limit takes x's
// sign), and callers select on the quotient.
#pragma omp declare simd notinbranch
inline float fast_exp_finite(float x) {
    constexpr float kMid = 88.0f, kHalfSpan = kExpOverflow - kMid;  // exact: 88.72283 above, 87.27717 below
    const float limit = kMid + std::copysign(kHalfSpan, x);
    const float a = x < 0.0f ? -x : x;
    return exp_in_range(a > limit ? std::copysign(limit, x) : x);
}

// tanh to about 1e-7 absolute: sign(u)·(1 − 2/(e^{2|u|} + 1)); exactly ±1 from |u| = 10
// (tanh(9) is still 0.99999994 in float, and a gradient 1 − tanh² may be scaled up a lot).
#pragma omp declare simd notinbranch
inline float fast_tanh(float u) {
    const float a = u < 0.0f ? -u : u;
    const float e = fast_exp(2.0f * (a < 10.0f ? a : 10.0f));
    const float t = 1.0f - 2.0f / (e + 1.0f);
    return u < 0.0f ? -t : t;
}

// e^(−x²/2) to a few ulp: x² is carried exactly (its fma remainder), else its rounding costs
// up to x²/2 · 2⁻²⁴ relative (4e-6 at |x| = 12). 0 from |x| ≈ 13.2.
#pragma omp declare simd notinbranch
inline float fast_exp_neg_half_square(float x) {
    const float a = x < 0.0f ? -x : x;
    const float c = a > 15.0f ? 15.0f : a;  // keeps c² finite (e^(−112) is 0 anyway); NaN stays NaN
    const float hi = c * c, lo = std::fma(c, c, -hi);
    return fast_exp(-0.5f * hi) * (1.0f - 0.5f * lo);
}

// erfc(a/√2) for a >= 0, i.e. 2·(1 − Φ(a)), Φ the standard normal CDF, to about 5e-7 relative
// while it is a normal float (a < 13.2), and 0 beyond. Numerical Recipes' erfcc, a Chebyshev fit
// good to 1.2e-7 relative: t·e^(P(t) − a²/2), t = 1/(1 + a/(2√2)); a²/2 and the exponent's sum
// are carried with their rounding errors (fma, two-sum), which would otherwise cost up to
// 1.5e-5 in the tail. Relative accuracy there is what the exact GELU needs: for x < 0,
// 1 + erf(x/√2) = erfc(|x|/√2), tiny, and not a difference.
#pragma omp declare simd notinbranch
inline float fast_erfc_over_sqrt2(float a) {
    const float c = a > 15.0f ? 15.0f : a;  // as above
    const float t = 1.0f / (1.0f + 0.35355339f * c);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    const float hi = c * c, lo = std::fma(c, c, -hi);
    const float b = -0.5f * hi, s = p + b;  // two-sum: s + err == p + b exactly
    const float bb = s - p, err = (p - (s - bb)) + (b - bb);
    return t * fast_exp(s) * (1.0f + err - 0.5f * lo);
}

}  // namespace lmforge::kernels
