// train.task = "lm": next-token prediction on token shards (data/dataloader.h), trained for
// train.max_steps; validation loss and perplexity on the val shards; text samples during
// training (sample.every) and at the end (sample.count).
#pragma once

#include <memory>

#include "train/task.h"

namespace lmforge {

std::unique_ptr<Task> make_lm_task(const TrainConfig& cfg, const Tokenizer* tokenizer);

}  // namespace lmforge
