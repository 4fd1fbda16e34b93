// Softmax and cross-entropy fused, over logits whose rows are padded from V to Vp columns (the
// vocabulary rounded up for alignment). Columns V..Vp-1 never reach the softmax or the loss.
// A target of kIgnoreIndex (-100, PyTorch's default) contributes no loss and no gradient.
#pragma once

#include <cstdint>

namespace lmforge::kernels {

inline constexpr int32_t kIgnoreIndex = -100;

// logits (N, Vp); targets (N), each in [0, V) or kIgnoreIndex (checked by the caller).
// losses (N): -log softmax(logits[n, :V])[targets[n]], 0 for ignored rows.
// lse (N): log-sum-exp of each row over its first V columns, saved for backward.
void crossentropy_forward(float* losses, float* lse, const float* logits,
                          const int32_t* targets, int64_t N, int64_t V, int64_t Vp);

// Writes (does not accumulate) dlogits (N, Vp) = dloss * (softmax - onehot(target)) on the
// first V columns of counted rows, and 0 elsewhere: it starts the backward pass, so there is
// nothing to add to. dlogits may alias logits, so the logits buffer is reused.
void crossentropy_backward(float* dlogits, const float* logits, const float* lse,
                           const int32_t* targets, float dloss, int64_t N, int64_t V,
                           int64_t Vp);
// The same written in bfloat16 (mixed precision: the LM head's backward GEMMs read bf16).
void crossentropy_backward_bf16(uint16_t* dlogits, const float* logits, const float* lse,
                                const int32_t* targets, float dloss, int64_t N, int64_t V,
                                int64_t Vp);

}  // namespace lmforge::kernels
