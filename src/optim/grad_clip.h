// Clipping by the global gradient norm, as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <cstdint>

namespace lmforge {

// The L2 norm of grads (n).
double grad_norm(const float* grads, int64_t n);
double grad_norm(const uint16_t* grads, int64_t n);  // gradients kept in bfloat16

// The factor that clipping to max_norm multiplies gradients by: min(1, max_norm / (norm +
// 1e-6)); 1 when max_norm <= 0 (no clipping). Pass it to AdamW::step as grad_scale.
float clip_factor(double norm, double max_norm);

// Returns the L2 norm of grads (n) before clipping, and scales grads by clip_factor in place.
double clip_grad_norm(float* grads, int64_t n, double max_norm);

}  // namespace lmforge
