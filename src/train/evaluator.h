// Validation of a language model on token shards: the losses over the first W windows of a
// split, read in order (no shuffle), so every evaluation of a run sees the same tokens. Never
// past the split's end: a window scored twice would weigh twice, so the last batch may be
// partly empty and W may be cut.
#pragma once

#include <cstdint>

#include "data/dataloader.h"
#include "model/batch.h"
#include "model/model.h"

namespace lmforge {

// This process's share of the losses (sum them over processes for the split's); windows 0:
// the whole split once.
LossSum evaluate_windows(Model& model, DataLoader& loader, int64_t windows);

}  // namespace lmforge
