// Clipping by the global gradient norm, as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <cstdint>

namespace lmforge {

// Returns the L2 norm of grads (n) before clipping; if max_norm > 0, scales grads by
// min(1, max_norm / (norm + 1e-6)).
double clip_grad_norm(float* grads, int64_t n, double max_norm);

}  // namespace lmforge
