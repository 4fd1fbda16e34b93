// Scalar twin of kernels/tanh.h.
#pragma once

#include <cmath>
#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
void tanh_forward(T_* out, const T_* inp, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = std::tanh(inp[i]);
}

template <class T_>
void tanh_backward(T_* dinp, const T_* dout, const T_* out, int64_t n) {
    for (int64_t i = 0; i < n; i++) dinp[i] = dout[i] * (T_(1) - out[i] * out[i]);
}

}  // namespace lmforge::kernels::ref
