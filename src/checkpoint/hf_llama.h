// Hugging Face Llama directories (LlamaForCausalLM, LlamaForSequenceClassification, as
// save_pretrained writes them: config.json + model.safetensors) to and from lmforge's Llama.
// lmforge stores Llama's weights under Hugging Face's names and layout, so moving between the
// two is dtype conversion and a config file. config.json is read in both dialects:
// transformers 4's (rope_theta and rope_scaling at the top) and 5's (rope_parameters).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/llama.h"
#include "tokenizer/tokenizer.h"

namespace lmforge {

// The model shape from DIR/config.json. InputError naming the file and field for anything
// lmforge does not compute exactly (another activation, biases, a rope_scaling type other
// than llama3, num_key_value_heads that do not divide the heads, a head_dim of its own).
LlamaConfig read_hf_llama_config(const std::string& dir);

// Weights from DIR (F32, F16 or BF16) into a model of read_hf_llama_config's shape.
void load_hf_llama_weights(Llama& model, const std::string& dir);

// The token config.json names as bos and eos: the tokenizer's end-of-text id where it has one
// inside the model's vocabulary, else null.
nlohmann::json hf_eos_id(const Tokenizer* tokenizer, int64_t vocab_size);

// config.json for a model of shape c: LlamaForCausalLM, or LlamaForSequenceClassification
// with id2label from label_names where given; bos/eos (and a classifier's pad) as given.
nlohmann::json hf_llama_config(const LlamaConfig& c, const nlohmann::json& eos_id,
                               const std::vector<std::string>& label_names = {});

// Writes DIR/config.json and DIR/model.safetensors (F32, or DTYPE: F16, BF16) that
// transformers' LlamaForCausalLM (or LlamaForSequenceClassification) loads, and `files`
// (name, content) beside them (a tokenizer's). DIR is created or replaced atomically.
void save_hf_llama(const Llama& model, const std::string& dir, const nlohmann::json& eos_id,
                   const std::vector<std::string>& label_names = {}, Dtype dtype = Dtype::F32,
                   const std::vector<std::pair<std::string, std::string>>& files = {});

}  // namespace lmforge
