// Scalar twin of kernels/relu.h.
#pragma once

#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
void relu_forward(T_* out, const T_* inp, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = inp[i] > T_(0) ? inp[i] : T_(0);
}

template <class T_>
void relu_backward(T_* dinp, const T_* dout, const T_* out, int64_t n) {
    for (int64_t i = 0; i < n; i++) dinp[i] = out[i] > T_(0) ? dout[i] : T_(0);
}

}  // namespace lmforge::kernels::ref
