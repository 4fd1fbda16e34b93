// Scalar twin of kernels/adamw.h, written as the textbook update with m̂ and v̂.
#pragma once

#include <cmath>
#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
void adamw_update(T_* params, T_* m, T_* v, const T_* grads, int64_t n, T_ lr, T_ beta1,
                  T_ beta2, T_ eps, T_ weight_decay, int64_t step) {
    for (int64_t i = 0; i < n; i++) {
        params[i] -= lr * weight_decay * params[i];
        m[i] = beta1 * m[i] + (1 - beta1) * grads[i];
        v[i] = beta2 * v[i] + (1 - beta2) * grads[i] * grads[i];
        const T_ m_hat = m[i] / (1 - std::pow(beta1, T_(step)));
        const T_ v_hat = v[i] / (1 - std::pow(beta2, T_(step)));
        params[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
}

}  // namespace lmforge::kernels::ref
