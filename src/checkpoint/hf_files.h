// The Hugging Face files a checkpoint carries beside its model.safetensors, so that
// transformers' from_pretrained loads any checkpoint directory of a run as it is (best/,
// final/, checkpoints/step_N/): config.json and generation_config.json, and for a GPT-2 model
// with a byte-level BPE tokenizer GPT2Tokenizer's files. (lmforge export remains for a clean
// directory without optimizer state.)
#pragma once

#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lmforge {

// tokenizer: the run's (null if none); label_names: a classifier's class names.
CheckpointFiles hf_files(const Model& model, const Tokenizer* tokenizer, const std::vector<std::string>& label_names);

}  // namespace lmforge
