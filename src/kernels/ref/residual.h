// Scalar twin of kernels/residual.h.
#pragma once

#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
void residual_forward(T_* out, const T_* a, const T_* b, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

template <class T_>
void residual_backward(T_* da, T_* db, const T_* dout, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

}  // namespace lmforge::kernels::ref
