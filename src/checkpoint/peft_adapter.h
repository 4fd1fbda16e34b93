// A LoRA model's adapters as PEFT writes them (PeftModel.save_pretrained): adapter_model.safetensors
// under PEFT's names, which are lmforge's parameter names as they are, and adapter_config.json,
// so that PyPI peft's PeftModel.from_pretrained(base, DIR) loads them onto the base model.
#pragma once

#include <string>

#include "model/llama.h"

namespace lmforge {

// DIR (created or replaced atomically): the adapters (and a classifier's head, as PEFT's
// modules_to_save) in F32, and a config naming rank, alpha, dropout, targets, the task type
// (CAUSAL_LM or SEQ_CLS) and the base's directory. Error unless the model has LoRA.
void save_peft_adapter(const Llama& model, const std::string& dir);

}  // namespace lmforge
