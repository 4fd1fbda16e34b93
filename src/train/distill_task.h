// train.task = "distill": knowledge distillation (Hinton et al. 2015), as DistilBERT was made
// (Sanh et al. 2019). A student (model.*) learns from a teacher checkpoint (distill.teacher) on
// the student's own task: next-token prediction for GPT-2, masked LM for BERT and DistilBERT.
// At each counted target the loss is
//   task_weight · cross-entropy + kl_weight · T² · KL(teacher ‖ student), both at temperature T,
// with the teacher run forward only on the same batch. Everything else — data, evaluation (the
// task's own validation loss), samples, checkpoints, exact resume — is the task's.
#pragma once

#include <memory>

#include "train/task.h"

namespace lmforge {

std::unique_ptr<Task> make_distill_task(const TrainConfig& cfg, const Tokenizer* tokenizer);

}  // namespace lmforge
