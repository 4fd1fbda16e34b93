#include "kernels/adamw.h"

#include <cmath>

#include "kernels/bf16.h"

namespace lmforge::kernels {

namespace {

template <bool kMirror>
void update(float* params, float* m, float* v, const float* grads, int64_t n, const AdamWHyper& h,
            uint16_t* mirror) {
    const float bias_correction1 = 1.0f - std::pow(h.beta1, static_cast<float>(h.step));
    const float bias_correction2 = 1.0f - std::pow(h.beta2, static_cast<float>(h.step));
    const float step_size = h.lr / bias_correction1;
    const float bias_correction2_sqrt = std::sqrt(bias_correction2);
    const float decay = 1.0f - h.lr * h.weight_decay;
    // Locals, not h's fields: stores through params/m/v could alias a reference's fields,
    // which stops the loop from vectorising.
    const float scale = h.grad_scale, one_minus_beta1 = 1.0f - h.beta1, beta2 = h.beta2;
    const float one_minus_beta2 = 1.0f - h.beta2, eps = h.eps;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        const float g = grads[i] * scale;  // = torch's clip, then step
        const float mi = m[i] + (g - m[i]) * one_minus_beta1;  // torch: m.lerp_(g, 1 - beta1)
        const float vi = v[i] * beta2 + one_minus_beta2 * g * g;
        m[i] = mi;
        v[i] = vi;
        const float denom = std::sqrt(vi) / bias_correction2_sqrt + eps;
        const float p = params[i] * decay - step_size * mi / denom;
        params[i] = p;
        if constexpr (kMirror) mirror[i] = lmforge::to_bf16(p);
    }
}

}  // namespace

void adamw_update(float* params, float* m, float* v, const float* grads, int64_t n,
                  const AdamWHyper& h, uint16_t* mirror) {
    // Two loops rather than a test inside one, so each vectorises.
    if (mirror != nullptr) {
        update<true>(params, m, v, grads, n, h, mirror);
    } else {
        update<false>(params, m, v, grads, n, h, nullptr);
    }
}

}  // namespace lmforge::kernels
