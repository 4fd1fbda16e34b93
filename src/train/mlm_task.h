// train.task = "mlm": masked-LM pretraining of a BERT encoder on token shards, cut into pieces
// at document ends and every seq_len - 2 tokens (train/mlm_batches.h), trained for
// train.max_steps over passes of the pieces in a fresh order each pass. Validation loss and
// masked-token accuracy on the val shards' pieces, masked alike at every evaluation.
#pragma once

#include <memory>

#include "train/task.h"

namespace lmforge {

std::unique_ptr<Task> make_mlm_task(const TrainConfig& cfg);

}  // namespace lmforge
