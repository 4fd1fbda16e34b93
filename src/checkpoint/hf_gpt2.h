// Hugging Face GPT-2 directories, as `save_pretrained` writes them (config.json +
// model.safetensors), to and from lmforge models. lmforge already stores GPT-2's weights
// under Hugging Face's names and in its Conv1D layout ((in, out) linear weights), so moving
// between the two is renaming ("transformer." prefix), dtype conversion and a config file;
// nothing is transposed. Only what lmforge computes exactly is accepted: GPT2LMHeadModel,
// GPT2Model or GPT2ForSequenceClassification (its "score.weight" head, num_labels from
// id2label) with gelu_new, layer_norm_epsilon 1e-5, a tied LM head, unscaled-by-layer attention.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "io/safetensors.h"
#include "model/gpt2.h"
#include "tokenizer/tokenizer.h"

namespace lmforge {

// The model shape from DIR/config.json. InputError naming the file and field for anything
// lmforge does not compute exactly (another architecture, activation, epsilon, untied head).
Gpt2Config read_hf_gpt2_config(const std::string& dir);

// Weights from DIR/model.safetensors (F32, F16 or BF16; names with or without the
// "transformer." prefix) into a model of read_hf_gpt2_config's shape. InputError naming the
// file and the first missing or misshapen tensor.
void load_hf_gpt2_weights(Gpt2& model, const std::string& dir);

// config.json for a model of shape c: GPT2LMHeadModel, or GPT2ForSequenceClassification with
// id2label from LABEL_NAMES where given; the tokenizer's end-of-text id as bos, eos (and pad).
nlohmann::json hf_gpt2_config(const Gpt2Config& c, const Tokenizer* tokenizer,
                              const std::vector<std::string>& label_names = {});
// A byte-level BPE tokenizer as GPT2Tokenizer's files, (name, content): vocab.json,
// merges.txt, added_tokens.json where it has specials, tokenizer_config.json; or, for one
// GPT-2's files cannot hold (a Llama 3 tokenizer.json), its tokenizer.json and a
// tokenizer_config.json for transformers' fast tokenizer. Empty for the character tokenizer.
std::vector<std::pair<std::string, std::string>> hf_gpt2_tokenizer_files(const Tokenizer& tokenizer,
                                                                         int64_t block_size);

// Writes DIR/config.json and DIR/model.safetensors (F32, or DTYPE: F16, BF16) that transformers'
// GPT2LMHeadModel.from_pretrained loads (GPT2ForSequenceClassification with a head), and a byte-level BPE tokenizer, if given, as
// vocab.json + merges.txt (GPT2Tokenizer's files). DIR is created or replaced atomically.
// A classifier's id2label names its classes with LABEL_NAMES where given (one per label).
// Returns whether the tokenizer was written (a character tokenizer has no GPT-2 form).
bool save_hf_gpt2(const Gpt2& model, const std::string& dir, const Tokenizer* tokenizer = nullptr,
                  const std::vector<std::string>& label_names = {}, Dtype dtype = Dtype::F32);

}  // namespace lmforge
