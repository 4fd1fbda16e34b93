// Scalar twin of kernels/adamw.h, written as the textbook update with m̂ and v̂.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/bf16.h"

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

// The same with the moments stored in bf16: widened, updated in double, and stored back with
// the kernel's stochastic rounding (the element's index from first_index, the step's key).
inline void adamw_update_bf16_moments(float* params, bf16* m, bf16* v, const float* grads, int64_t n, double lr,
                                      double beta1, double beta2, double eps, double weight_decay, int64_t step,
                                      int64_t first_index) {
    for (int64_t i = 0; i < n; i++) {
        double p = params[i], mi = from_bf16(m[i]), vi = from_bf16(v[i]);
        const double g = grads[i];
        p -= lr * weight_decay * p;
        mi = beta1 * mi + (1 - beta1) * g;
        vi = beta2 * vi + (1 - beta2) * g * g;
        const double m_hat = mi / (1 - std::pow(beta1, double(step)));
        const double v_hat = vi / (1 - std::pow(beta2, double(step)));
        params[i] = static_cast<float>(p - lr * m_hat / (std::sqrt(v_hat) + eps));
        const uint32_t noise = rounding_noise(static_cast<uint32_t>(first_index + i), rounding_step_key(step));
        m[i] = to_bf16_stochastic(static_cast<float>(mi), noise);
        v[i] = to_bf16_stochastic(static_cast<float>(vi), noise >> 16);
    }
}

}  // namespace lmforge::kernels::ref
