#include "optim/grad_clip.h"

#include <cmath>

#include "kernels/grad_norm.h"

namespace lmforge {

double clip_grad_norm(float* grads, int64_t n, double max_norm) {
    const double norm = std::sqrt(kernels::sum_of_squares(grads, n));
    if (max_norm > 0.0) {
        const float f = kernels::clip_factor(norm, max_norm);
        if (f < 1.0f) kernels::scale_inplace(grads, n, f);
    }
    return norm;
}

}  // namespace lmforge
