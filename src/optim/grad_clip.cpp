#include "optim/grad_clip.h"

#include <cmath>

#include "kernels/grad_norm.h"

namespace lmforge {

double grad_norm(const float* grads, int64_t n) {
    return std::sqrt(kernels::sum_of_squares(grads, n));
}

double grad_norm(const uint16_t* grads, int64_t n) {
    return std::sqrt(kernels::sum_of_squares(grads, n));
}

float clip_factor(double norm, double max_norm) {
    return max_norm > 0.0 ? kernels::clip_factor(norm, max_norm) : 1.0f;
}

double clip_grad_norm(float* grads, int64_t n, double max_norm) {
    const double norm = grad_norm(grads, n);
    const float f = clip_factor(norm, max_norm);
    if (f < 1.0f) kernels::scale_inplace(grads, n, f);
    return norm;
}

}  // namespace lmforge
