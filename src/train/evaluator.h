// Validation: the mean loss over the first K batches of a split, read in order (no shuffle),
// so every evaluation of a run sees the same tokens.
#pragma once

#include <cstdint>

#include "data/dataloader.h"
#include "model/gpt2.h"

namespace lmforge {

struct EvalResult {
    double loss = 0;
    double perplexity = 0;
    int64_t batches = 0, tokens = 0;
};

// batches 0: the whole split once. Leaves the model planned for the loader's (B, T).
EvalResult evaluate(Gpt2& model, DataLoader& loader, int64_t batches);

}  // namespace lmforge
