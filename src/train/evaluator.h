// Validation: the mean loss per token over the first K batches of a split, read in order (no
// shuffle), so every evaluation of a run sees the same tokens. Never past the split's end: a
// window scored twice would weigh twice, so the last batch may be partly empty and K may be cut.
#pragma once

#include <cstdint>

#include "data/dataloader.h"
#include "model/gpt2.h"

namespace lmforge {

struct EvalResult {
    double loss = 0;  // per token, over this process's tokens
    double perplexity = 0;
    int64_t batches = 0;
    int64_t tokens = 0;     // this process's scored tokens
    double loss_sum = 0;    // their losses' sum: summed with `tokens` over ranks, the mean of all
};

// batches 0: the whole split once. Leaves the model planned for the loader's (B, T).
EvalResult evaluate(Gpt2& model, DataLoader& loader, int64_t batches);

}  // namespace lmforge
