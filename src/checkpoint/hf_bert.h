// Hugging Face BERT and DistilBERT directories (config.json + model.safetensors, as
// save_pretrained writes them) to and from lmforge's Bert. lmforge keeps their weights under
// Hugging Face's names and shapes, so moving between the two is dtype conversion and a config
// file (DistilBERT's: hf_distilbert.h). Only what lmforge computes exactly is accepted:
// BertForMaskedLM and BertForSequenceClassification with the erf GELU ("gelu"), absolute
// positions, an encoder without cross-attention, a tied decoder; DistilBERT's two alike.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/bert.h"

namespace lmforge {

// The model shape from DIR/config.json. InputError naming the file and field for anything
// lmforge does not compute exactly.
BertConfig read_hf_bert_config(const std::string& dir);

// Weights from DIR/model.safetensors (F32, F16 or BF16) into a model of read_hf_bert_config's
// shape. InputError naming the file and the first missing or misshapen tensor.
void load_hf_bert_weights(Bert& model, const std::string& dir);

// config.json for a model of shape c (save_hf_bert says what it holds).
nlohmann::json hf_bert_config(const BertConfig& c, std::optional<int64_t> pad_token_id,
                              const std::vector<std::string>& label_names = {});

// Writes DIR/config.json and DIR/model.safetensors (F32, or DTYPE: F16, BF16) that transformers' from_pretrained
// loads as hf_bert_architecture names. DIR is created
// or replaced atomically. PAD_TOKEN_ID, where known, is written as config.json's pad_token_id:
// without it transformers takes id 0 as padding and freezes that token's embedding row. A
// classifier's id2label names its classes with LABEL_NAMES where given (one per label).
void save_hf_bert(const Bert& model, const std::string& dir, std::optional<int64_t> pad_token_id,
                  const std::vector<std::string>& label_names = {}, Dtype dtype = Dtype::F32);

// "BertForMaskedLM", "DistilBertForSequenceClassification", ...: the class of a model of shape c.
const char* hf_bert_architecture(const BertConfig& c);

// Whether DIR/config.json names model_type "bert" or "distilbert".
bool is_hf_bert_dir(const std::string& dir);

}  // namespace lmforge
