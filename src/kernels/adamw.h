// One AdamW step over a contiguous range of a flat parameter buffer, in the operation order
// of torch.optim.AdamW (decoupled weight decay first, then bias-corrected moments):
// https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html
#pragma once

#include <cstdint>

namespace lmforge::kernels {

struct AdamWHyper {
    float lr = 3e-4f;
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float weight_decay = 0.0f;  // already zero for ranges that are not decayed
    int64_t step = 1;           // 1-based, for the bias corrections
    float grad_scale = 1.0f;    // multiplies every gradient first: clipping, folded in
};

// params, m, v: updated in place; grads read. All (n). mirror (n), if not null, receives
// the updated parameters in bfloat16 (mixed precision's weight copies, refreshed in the same
// pass). Serial and vectorised: the caller spreads ranges over threads (optim/adamw.cpp).
void adamw_update(float* params, float* m, float* v, const float* grads, int64_t n,
                  const AdamWHyper& h, uint16_t* mirror = nullptr);

// The same with the moments kept in bfloat16 (half their memory): each is widened, updated in
// fp32, and stored back with stochastic rounding, whose random bits come from the element's
// index in the whole buffer (first_index for element 0) and the step, so results do not depend
// on how threads or ranks split the buffer.
void adamw_update(float* params, uint16_t* m, uint16_t* v, const float* grads, int64_t n,
                  const AdamWHyper& h, int64_t first_index, uint16_t* mirror = nullptr);

// Both forms with the gradients kept in bfloat16 (train.grads = "bf16"), widened as read.
void adamw_update(float* params, float* m, float* v, const uint16_t* grads, int64_t n,
                  const AdamWHyper& h, uint16_t* mirror = nullptr);
void adamw_update(float* params, uint16_t* m, uint16_t* v, const uint16_t* grads, int64_t n,
                  const AdamWHyper& h, int64_t first_index, uint16_t* mirror = nullptr);

}  // namespace lmforge::kernels
