// train.task = "sft": instruction tuning of a GPT-2 model on prompt/response examples from
// `lmforge prepare --instructions`, epoch by epoch, the loss on response tokens only, batches
// padded to their longest example. Validation loss and exact match (every response token the
// model's first choice); best/ by validation loss; at the end the test split's figures and
// greedy completions of best/'s weights, printed and saved as test_report.json.
#pragma once

#include <memory>

#include "train/task.h"

namespace lmforge {

std::unique_ptr<Task> make_sft_task(const TrainConfig& cfg, const Tokenizer* tokenizer);

}  // namespace lmforge
