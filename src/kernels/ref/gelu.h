// Scalar twin of kernels/gelu.h.
#pragma once

#include <cmath>
#include <cstdint>

namespace lmforge::kernels::ref {

// The tanh form, 0.5 x (1 + tanh(u)), u = √(2/π)(x + 0.044715 x³), with 0.5 (1 + tanh(u)) as the
// logistic σ(2u) = 1 / (1 + e^(−2u)): 1 + tanh(u) is a difference that is 0 in double from u = −19.
template <class T_>
void gelu_forward(T_* out, const T_* inp, int64_t n) {
    const T_ k = std::sqrt(T_(2) / T_(3.14159265358979323846));
    for (int64_t i = 0; i < n; i++) {
        const T_ x = inp[i];
        out[i] = x / (T_(1) + std::exp(T_(-2) * k * (x + T_(0.044715) * x * x * x)));
    }
}

// σ + 2x σ (1 − σ) du/dx, with 1 − σ = 1 / (1 + e^(2u)): no difference near σ = 1, and still
// 1 where e^(−2u) overflows (x below about −21.5 in double).
template <class T_>
void gelu_backward(T_* dinp, const T_* dout, const T_* inp, int64_t n) {
    const T_ k = std::sqrt(T_(2) / T_(3.14159265358979323846));
    for (int64_t i = 0; i < n; i++) {
        const T_ x = inp[i];
        const T_ e = std::exp(T_(-2) * k * (x + T_(0.044715) * x * x * x));
        const T_ sigma = T_(1) / (T_(1) + e);
        const T_ one_minus_sigma = T_(1) / (T_(1) + T_(1) / e);
        const T_ du = k * (T_(1) + T_(3) * T_(0.044715) * x * x);
        dinp[i] = dout[i] * (sigma + T_(2) * x * du * sigma * one_minus_sigma);
    }
}

// The erf form: 0.5 x (1 + erf(x/√2)), with 1 + erf(y) as erfc(−y), exact in the left tail.
template <class T_>
void gelu_erf_forward(T_* out, const T_* inp, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const T_ x = inp[i];
        out[i] = T_(0.5) * x * std::erfc(-x / std::sqrt(T_(2)));
    }
}

template <class T_>
void gelu_erf_backward(T_* dinp, const T_* dout, const T_* inp, int64_t n) {
    const T_ pi = T_(3.14159265358979323846);
    for (int64_t i = 0; i < n; i++) {
        const T_ x = inp[i];
        const T_ cdf = T_(0.5) * std::erfc(-x / std::sqrt(T_(2)));
        dinp[i] = dout[i] * (cdf + x * std::exp(-x * x / T_(2)) / std::sqrt(T_(2) * pi));
    }
}

}  // namespace lmforge::kernels::ref
