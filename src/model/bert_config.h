// A BERT-style encoder's shape (https://arxiv.org/abs/1810.04805): layers, heads, width, the
// feed-forward width, vocabulary, positions and token types, with the named presets — Google's
// compact BERTs (https://arxiv.org/abs/1908.08962) up to bert-base and bert-large, and
// DistilBERT (https://arxiv.org/abs/1910.01108), the same encoder without token types and with
// a ReLU classification head, under its own tensor names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmforge {

// BERT, or DistilBERT: no token-type embeddings; the classification head is pre_classifier +
// ReLU on the first token where BERT's pooler has tanh; its own Hugging Face names.
enum class BertFamily { Bert, DistilBert };

struct BertConfig {
    int64_t n_layer = 12;
    int64_t n_head = 12;
    int64_t hidden = 768;
    int64_t intermediate = 3072;  // the feed-forward width (4 · hidden in every preset)
    int64_t vocab_size = 30522;
    int64_t max_position = 512;   // longest sequence: rows of the position table
    int64_t type_vocab_size = 2;  // segments A and B
    // > 0: a pooler and a classification head (BertForSequenceClassification); 0: the
    // masked-LM head (BertForMaskedLM).
    int64_t num_labels = 0;
    float layer_norm_eps = 1e-12f;
    BertFamily family = BertFamily::Bert;  // DistilBERT: type_vocab_size 0

    bool distil() const { return family == BertFamily::DistilBert; }
    const char* arch() const { return distil() ? "distilbert" : "bert"; }  // as checkpoints name it

    // Word-embedding rows reserved: the vocabulary rounded up to 64, as GPT-2's (the extra
    // rows are zero and never reach the loss).
    int64_t padded_vocab() const { return (vocab_size + 63) / 64 * 64; }
    int64_t head_size() const { return hidden / n_head; }

    // Throws InputError naming the field and its value.
    void validate() const;

    // As a checkpoint records it ({"arch": "bert" or "distilbert", "n_layer": ...}); from_json
    // throws InputError naming `file` and the field for one missing or not a number of its kind.
    std::string to_json() const;
    static BertConfig from_json(const std::string& text, const std::string& file);

    // bert-tiny, bert-mini, bert-small, bert-medium, bert-base, bert-large, distilbert-base.
    // InputError listing the names for an unknown one.
    static BertConfig preset(const std::string& name);
    static std::vector<std::string> preset_names();
    static bool is_preset(const std::string& name);
};

}  // namespace lmforge
