// The model a training config asks for: the preset, its overrides, the data's vocabulary.
#pragma once

#include <cstdint>

#include "model/gpt2_config.h"
#include "train/config.h"

namespace lmforge {

// model.* over the preset; the vocabulary from model.vocab_size, else the data directory's
// prepare.json; block_size at least seq_len (InputError if set below it).
Gpt2Config model_config(const TrainConfig& c, int64_t seq_len);

}  // namespace lmforge
