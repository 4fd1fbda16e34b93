// `lmforge train` with train.task = "sft": generative (instruction) fine-tuning of a GPT-2
// model on the examples of `lmforge prepare --instructions`. Each example is its prompt, then
// its response and <|endoftext|>; the loss is the next-token cross-entropy on the response's
// tokens only (the prompt's are context, not targets), and batches are padded to their longest
// example. Epoch by epoch: train and validation loss on response tokens, the best weights by
// validation loss in best/. At the end, on the test split: loss, perplexity, and the share of
// responses greedy decoding reproduces token for token — computed by teacher forcing, since
// greedy decoding gives the reference exactly when each reference token is the top logit after
// the reference's own prefix — and greedy completions of a few test prompts. Under mpirun each
// rank takes its part of every batch and of every split.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "train/trainer.h"

namespace lmforge {

struct SftSummary {
    std::string run_dir;
    int64_t epochs = 0, steps = 0, best_epoch = 0;
    double best_val_loss = 0;
    double test_loss = 0, test_exact_match = 0;
    int64_t test_examples = 0;
    std::vector<std::pair<std::string, std::string>> samples;  // (reference, greedy completion)
    double seconds = 0;
    int rank = 0;
};

SftSummary train_sft(const TrainOptions& opts);

}  // namespace lmforge
