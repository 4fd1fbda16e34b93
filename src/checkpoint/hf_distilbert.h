// Hugging Face DistilBERT's config.json (model_type "distilbert") to and from lmforge's
// BertConfig of the DistilBERT family. The weights move as BERT's do (hf_bert.h): lmforge keeps
// DistilBERT's tensors under transformers' names and shapes. Only what lmforge computes exactly is
// accepted: DistilBertForMaskedLM and DistilBertForSequenceClassification with the erf GELU,
// learned positions and a tied vocab_projector.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/bert_config.h"

namespace lmforge {

// The shape config.json J at PATH gives. InputError naming the file and field for anything
// lmforge does not compute exactly.
BertConfig parse_hf_distilbert_config(const nlohmann::json& j, const std::string& path);

// config.json for DistilBERT of shape c, dropout 0 (lmforge trains without it).
nlohmann::json hf_distilbert_config(const BertConfig& c, std::optional<int64_t> pad_token_id,
                                    const std::vector<std::string>& label_names);

}  // namespace lmforge
