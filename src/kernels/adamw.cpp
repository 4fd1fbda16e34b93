#include "kernels/adamw.h"

#include <cmath>

#include "kernels/bf16.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

// A moment (or a gradient) as float, and a moment stored back: exactly for fp32 moments; for bf16 ones, rounded
// stochastically with 16 of the element's random bits (the low half for m, the high for v).
inline float load(const float* x, int64_t i) { return x[i]; }
inline float load(const bf16* x, int64_t i) { return from_bf16(x[i]); }
inline void store(float* x, int64_t i, float value, uint32_t) { x[i] = value; }
inline void store(bf16* x, int64_t i, float value, uint32_t noise) { x[i] = to_bf16_stochastic(value, noise); }

template <class Moment, class Grad, bool kMirror>
void update(float* params, Moment* m, Moment* v, const Grad* grads, int64_t n, const AdamWHyper& h,
            int64_t first_index, uint16_t* mirror) {
    const float bias_correction1 = 1.0f - std::pow(h.beta1, static_cast<float>(h.step));
    const float bias_correction2 = 1.0f - std::pow(h.beta2, static_cast<float>(h.step));
    const float step_size = h.lr / bias_correction1;
    const float bias_correction2_sqrt = std::sqrt(bias_correction2);
    const float decay = 1.0f - h.lr * h.weight_decay;
    // Locals, not h's fields: stores through params/m/v could alias a reference's fields,
    // which stops the loop from vectorising.
    const float scale = h.grad_scale, one_minus_beta1 = 1.0f - h.beta1, beta2 = h.beta2;
    const float one_minus_beta2 = 1.0f - h.beta2, eps = h.eps;
    const uint32_t step_key = rounding_step_key(h.step), index0 = static_cast<uint32_t>(first_index);
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        const float g = load(grads, i) * scale;  // = torch's clip, then step
        const float m_old = load(m, i);
        const float mi = m_old + (g - m_old) * one_minus_beta1;  // torch: m.lerp_(g, 1 - beta1)
        const float vi = load(v, i) * beta2 + one_minus_beta2 * g * g;
        // Unused, and so not computed, for fp32 moments.
        const uint32_t noise = rounding_noise(index0 + static_cast<uint32_t>(i), step_key);
        store(m, i, mi, noise);
        store(v, i, vi, noise >> 16);
        const float denom = std::sqrt(vi) / bias_correction2_sqrt + eps;
        const float p = params[i] * decay - step_size * mi / denom;
        params[i] = p;
        if constexpr (kMirror) mirror[i] = lmforge::to_bf16(p);
    }
}

template <class Moment, class Grad>
void update_either(float* params, Moment* m, Moment* v, const Grad* grads, int64_t n, const AdamWHyper& h,
                   int64_t first_index, uint16_t* mirror) {
    // Two loops rather than a test inside one, so each vectorises.
    if (mirror != nullptr) {
        update<Moment, Grad, true>(params, m, v, grads, n, h, first_index, mirror);
    } else {
        update<Moment, Grad, false>(params, m, v, grads, n, h, first_index, nullptr);
    }
}

}  // namespace

void adamw_update(float* params, float* m, float* v, const float* grads, int64_t n,
                  const AdamWHyper& h, uint16_t* mirror) {
    update_either(params, m, v, grads, n, h, 0, mirror);
}

void adamw_update(float* params, uint16_t* m, uint16_t* v, const float* grads, int64_t n,
                  const AdamWHyper& h, int64_t first_index, uint16_t* mirror) {
    update_either(params, m, v, grads, n, h, first_index, mirror);
}

void adamw_update(float* params, float* m, float* v, const uint16_t* grads, int64_t n,
                  const AdamWHyper& h, uint16_t* mirror) {
    update_either(params, m, v, grads, n, h, 0, mirror);
}

void adamw_update(float* params, uint16_t* m, uint16_t* v, const uint16_t* grads, int64_t n,
                  const AdamWHyper& h, int64_t first_index, uint16_t* mirror) {
    update_either(params, m, v, grads, n, h, first_index, mirror);
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
