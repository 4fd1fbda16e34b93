// What a student learns from its teacher in distillation, handed to the fused LM head
// (kernels/lm_head_loss.h) with a batch (model/batch.h).
#pragma once

#include <cstdint>

namespace lmforge::kernels {

// Distillation's soft targets (train.task = "distill"): for each row of the head, the
// teacher's log-probabilities at temperature T. A row's loss for the gradient becomes
//   task_weight · CE(z, t) + kl_weight · T² · KL(p_teacher ‖ softmax(z / T)),
// whose dlogits are dloss · (task_weight · (softmax(z) − one-hot(t)) + kl_weight · T ·
// (softmax(z / T) − p_teacher)) (Hinton et al. 2015: T² keeps the soft term's gradients at the
// hard term's scale). losses still receive CE alone; kl each row's T² · KL.
struct SoftTargets {
    int64_t rows = 0;             // N: the rows the head sees (its counted targets)
    const float* logp = nullptr;  // (N, V): log softmax(teacher logits / T), row n for the head's row n
    float temperature = 1, task_weight = 1, kl_weight = 0;
    float* kl = nullptr;  // (N) out: T² · KL, 0 where the target is ignored
};

// A teacher's soft targets from its logits: logp (M, V) row m = log softmax(logits row
// rows[m] / temperature), logits (·, stride) with the first V columns real (stride ≥ V: GPT-2's
// padded vocabulary).
void teacher_log_probs(float* logp, const float* logits, const int32_t* rows, int64_t M, int64_t V, int64_t stride,
                       float temperature);

}  // namespace lmforge::kernels
