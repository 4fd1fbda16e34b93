// Cross-entropy over logits whose rows are padded from V to Vp columns (the vocabulary rounded
// up for alignment): columns V..Vp-1 never reach the softmax or the loss. A target of
// kIgnoreIndex (-100, PyTorch's default) contributes no loss and no gradient.
// The kernel fuses it with the LM head (lm_head_loss.h); ref/crossentropy.h is the unfused
// softmax + cross-entropy it is tested against.
#pragma once

#include <cstdint>

namespace lmforge::kernels {

inline constexpr int32_t kIgnoreIndex = -100;

}  // namespace lmforge::kernels
