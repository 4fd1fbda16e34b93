#include "checkpoint/hf_bert.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "checkpoint/hf_common.h"
#include "checkpoint/hf_distilbert.h"
#include "io/safetensors.h"

namespace lmforge {

using json = nlohmann::json;

namespace {

// The shape config.json J at PATH gives, where lmforge computes it exactly.
BertConfig parse_bert_config(const json& j, const std::string& path) {
    const auto fail = [&](const std::string& field, const std::string& what, const std::string& hint = "") {
        throw InputError(fmt::format("{}: {} {}", path, field, what), hint);
    };
    if (const auto model_type = hf_config_field(j, "model_type", std::string(), path); model_type != "bert") {
        fail("model_type", fmt::format("= \"{}\" is not BERT", model_type));
    }
    const std::string arch = hf_architecture(j, path, {"BertForMaskedLM", "BertForSequenceClassification"});
    const auto integer = [&](const char* field) -> int64_t {
        if (!j.contains(field) || !j[field].is_number_integer()) fail(field, "is missing or not an integer");
        return j[field].get<int64_t>();
    };
    BertConfig cfg;
    cfg.n_layer = integer("num_hidden_layers");
    cfg.n_head = integer("num_attention_heads");
    cfg.hidden = integer("hidden_size");
    cfg.intermediate = integer("intermediate_size");
    cfg.vocab_size = integer("vocab_size");
    cfg.max_position = integer("max_position_embeddings");
    cfg.type_vocab_size = hf_config_field(j, "type_vocab_size", int64_t{2}, path);
    cfg.layer_norm_eps = static_cast<float>(hf_config_field(j, "layer_norm_eps", 1e-12, path));
    // What lmforge computes: the erf GELU, absolute positions, a plain encoder, a tied decoder.
    if (const auto act = hf_config_field(j, "hidden_act", std::string("gelu"), path); act != "gelu") {
        fail("hidden_act", fmt::format("= \"{}\" is not supported", act), "lmforge's BERT computes \"gelu\" (erf)");
    }
    if (const auto pos = hf_config_field(j, "position_embedding_type", std::string("absolute"), path); pos != "absolute") {
        fail("position_embedding_type", fmt::format("= \"{}\" is not supported", pos));
    }
    if (hf_config_field(j, "is_decoder", false, path)) fail("is_decoder", "= true is not supported");
    if (hf_config_field(j, "add_cross_attention", false, path)) fail("add_cross_attention", "= true is not supported");
    if (!hf_config_field(j, "tie_word_embeddings", true, path)) fail("tie_word_embeddings", "= false is not supported");
    if (arch == "BertForSequenceClassification") {
        cfg.num_labels = hf_num_labels(j, path);
    }
    try {
        cfg.validate();
    } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {}", path, e.what()));
    }
    return cfg;
}

}  // namespace

bool is_hf_bert_dir(const std::string& dir) {
    const std::string path = dir + "/config.json";
    if (!std::filesystem::exists(path)) return false;
    return read_hf_config(path, [&](const json& j) {
        const auto type = hf_config_field(j, "model_type", std::string(), path);
        return type == "bert" || type == "distilbert";
    });
}

BertConfig read_hf_bert_config(const std::string& dir) {
    const std::string path = dir + "/config.json";
    return read_hf_config(path, [&](const json& j) {
        if (hf_config_field(j, "model_type", std::string(), path) == "distilbert") {
            return parse_hf_distilbert_config(j, path);
        }
        return parse_bert_config(j, path);
    });
}

const char* hf_bert_architecture(const BertConfig& c) {
    if (c.distil()) return c.num_labels > 0 ? "DistilBertForSequenceClassification" : "DistilBertForMaskedLM";
    return c.num_labels > 0 ? "BertForSequenceClassification" : "BertForMaskedLM";
}

void load_hf_bert_weights(Bert& model, const std::string& dir) {
    const HfWeights file(dir);
    float* params = model.params().data();
    for (const ParamSpec& s : model.layout().specs()) {
        // Google's original checkpoints (bert-base-uncased among them) name LayerNorm's
        // parameters gamma and beta; transformers renames them on load, and so does this.
        std::string name = s.name;
        if (!file.contains(name) && name.ends_with("LayerNorm.weight")) name.replace(name.size() - 6, 6, "gamma");
        if (!file.contains(name) && name.ends_with("LayerNorm.bias")) name.replace(name.size() - 4, 4, "beta");
        read_hf_tensor(file, file.contains(name) ? name : s.name, s, params);
    }
    if (model.num_labels() == 0) {  // the decoder, if saved although tied
        const BertTensorNames& n = bert_tensor_names(model.config());
        const ParamSpec& word = model.layout().find(fmt::format("{}.word_embeddings.weight", n.embeddings));
        if (model.config().distil()) {
            check_tied_copy(file, "vocab_projector.weight", word, params);
        } else {
            check_tied_copy(file, "cls.predictions.decoder.weight", word, params);
            check_tied_copy(file, "cls.predictions.decoder.bias", model.layout().find("cls.predictions.bias"), params);
        }
    }
    model.weights_changed();
}

json hf_bert_config(const BertConfig& c, std::optional<int64_t> pad_token_id,
                    const std::vector<std::string>& label_names) {
    if (c.distil()) return hf_distilbert_config(c, pad_token_id, label_names);
    // Dropout 0: lmforge trains without it, so fine-tuning in transformers continues alike.
    json config = {{"architectures", {c.num_labels > 0 ? "BertForSequenceClassification" : "BertForMaskedLM"}},
                   {"model_type", "bert"},
                   {"num_hidden_layers", c.n_layer},
                   {"num_attention_heads", c.n_head},
                   {"hidden_size", c.hidden},
                   {"intermediate_size", c.intermediate},
                   {"vocab_size", c.vocab_size},
                   {"max_position_embeddings", c.max_position},
                   {"type_vocab_size", c.type_vocab_size},
                   {"hidden_act", "gelu"},
                   {"layer_norm_eps", c.layer_norm_eps},
                   {"position_embedding_type", "absolute"},
                   {"hidden_dropout_prob", 0.0},
                   {"attention_probs_dropout_prob", 0.0},
                   {"initializer_range", 0.02},
                   {"tie_word_embeddings", true},
                   {"is_decoder", false},
                   {"add_cross_attention", false},
                   {"torch_dtype", "float32"}};
    if (c.num_labels > 0) add_hf_label_maps(config, c.num_labels, label_names);
    if (pad_token_id) config["pad_token_id"] = *pad_token_id;
    return config;
}

void save_hf_bert(const Bert& model, const std::string& dir, std::optional<int64_t> pad_token_id,
                  const std::vector<std::string>& label_names, Dtype dtype) {
    save_hf_directory(dir, hf_bert_config(model.config(), pad_token_id, label_names), model, dtype);
}

}  // namespace lmforge
