// Scalar twin of kernels/grad_norm.h.
#pragma once

#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
double sum_of_squares(const T_* x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += static_cast<double>(x[i]) * x[i];
    return s;
}

}  // namespace lmforge::kernels::ref
