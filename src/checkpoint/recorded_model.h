// The model a model.safetensors records (its lmforge_config, Model::config_json): GPT-2,
// Llama, or a BERT-family encoder of the recorded shape, for the commands that read a
// checkpoint without its training config (logits, sample, eval, export).
#pragma once

#include <memory>
#include <string>

#include "backend/gemm.h"
#include "model/causal_lm.h"
#include "model/model.h"

namespace lmforge {

// The model of PATH's architecture and shape, its weights loaded from PATH.
std::unique_ptr<Model> load_recorded_model(const std::string& path, backend::Gemm& gemm,
                                           Precision precision = Precision::Fp32);
// The same for a command that needs a causal language model (GPT-2, Llama): InputError naming
// the command for an encoder.
std::unique_ptr<CausalLm> load_recorded_causal_lm(const std::string& path, backend::Gemm& gemm, const char* command,
                                                  Precision precision = Precision::Fp32);

}  // namespace lmforge
