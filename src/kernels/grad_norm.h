// The global gradient norm and clipping by it, as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <cstdint>

namespace lmforge::kernels {

// Σ x², over (n), in double: sums of millions of squares lose digits in float.
double sum_of_squares(const float* x, int64_t n);
// The same over bfloat16 values (gradients kept in bf16), widened as read.
double sum_of_squares(const uint16_t* x, int64_t n);

// x (n) *= scale.
void scale_inplace(float* x, int64_t n, float scale);

// The factor clip_grad_norm_ multiplies by: min(1, max_norm / (norm + 1e-6)).
inline float clip_factor(double norm, double max_norm) {
    const double f = max_norm / (norm + 1e-6);
    return static_cast<float>(f < 1.0 ? f : 1.0);
}

}  // namespace lmforge::kernels
