#include "checkpoint/hf_distilbert.h"

#include <fmt/format.h>

#include "checkpoint/hf_common.h"
#include "core/error.h"

namespace lmforge {

using json = nlohmann::json;

namespace {

// Refuses what lmforge does not compute: another activation, sinusoidal positions, an untied
// projector. DistilBERT's LayerNorm epsilon is fixed at 1e-12 in transformers, not configured.
void check_distilbert_computes(const json& j, const std::string& path) {
    if (const auto act = hf_config_field(j, "activation", std::string("gelu"), path); act != "gelu") {
        throw InputError(fmt::format("{}: activation = \"{}\" is not supported", path, act),
                         "lmforge's DistilBERT computes \"gelu\" (erf)");
    }
    if (hf_config_field(j, "sinusoidal_pos_embds", false, path)) {
        throw InputError(fmt::format("{}: sinusoidal_pos_embds = true is not supported", path),
                         "lmforge's DistilBERT learns its position embeddings");
    }
    if (!hf_config_field(j, "tie_word_embeddings", true, path)) {
        throw InputError(fmt::format("{}: tie_word_embeddings = false is not supported", path));
    }
}

}  // namespace

BertConfig parse_hf_distilbert_config(const json& j, const std::string& path) {
    const std::string arch =
        hf_architecture(j, path, {"DistilBertForMaskedLM", "DistilBertForSequenceClassification"});
    check_distilbert_computes(j, path);
    const auto integer = [&](const char* field, int64_t fallback) {
        return hf_config_field(j, field, fallback, path);
    };
    BertConfig cfg = BertConfig::preset("distilbert-base");  // transformers' defaults
    cfg.n_layer = integer("n_layers", cfg.n_layer);
    cfg.n_head = integer("n_heads", cfg.n_head);
    cfg.hidden = integer("dim", cfg.hidden);
    cfg.intermediate = integer("hidden_dim", cfg.intermediate);
    cfg.vocab_size = integer("vocab_size", cfg.vocab_size);
    cfg.max_position = integer("max_position_embeddings", cfg.max_position);
    if (arch == "DistilBertForSequenceClassification") cfg.num_labels = hf_num_labels(j, path);
    try {
        cfg.validate();
    } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {}", path, e.what()));
    }
    return cfg;
}

json hf_distilbert_config(const BertConfig& c, std::optional<int64_t> pad_token_id,
                          const std::vector<std::string>& label_names) {
    json config = {{"architectures", {c.num_labels > 0 ? "DistilBertForSequenceClassification" : "DistilBertForMaskedLM"}},
                   {"model_type", "distilbert"},
                   {"n_layers", c.n_layer},
                   {"n_heads", c.n_head},
                   {"dim", c.hidden},
                   {"hidden_dim", c.intermediate},
                   {"vocab_size", c.vocab_size},
                   {"max_position_embeddings", c.max_position},
                   {"sinusoidal_pos_embds", false},
                   {"activation", "gelu"},
                   {"dropout", 0.0},
                   {"attention_dropout", 0.0},
                   {"seq_classif_dropout", 0.0},
                   {"qa_dropout", 0.0},
                   {"initializer_range", 0.02},
                   {"tie_word_embeddings", true},
                   {"torch_dtype", "float32"}};
    if (c.num_labels > 0) add_hf_label_maps(config, c.num_labels, label_names);
    // transformers' own default is 0: write the run's, or null where lmforge knows none.
    config["pad_token_id"] = pad_token_id ? json(*pad_token_id) : json(nullptr);
    return config;
}

}  // namespace lmforge
