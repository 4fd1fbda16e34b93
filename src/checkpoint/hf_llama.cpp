#include "checkpoint/hf_llama.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "checkpoint/hf_common.h"
#include "core/error.h"
#include "core/file_io.h"

namespace lmforge {

using json = nlohmann::json;

namespace {

// rope_theta and the scaling: transformers 5 keeps both in rope_parameters, 4 at the top level.
void parse_rope(const json& j, const std::string& path, LlamaConfig& c) {
    const json* scaling = nullptr;
    if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
        const json& r = j["rope_parameters"];
        c.rope_theta = hf_config_field(r, "rope_theta", 10000.0, path);
        scaling = &r;
    } else {
        c.rope_theta = hf_config_field(j, "rope_theta", 10000.0, path);
        if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) scaling = &j["rope_scaling"];
    }
    if (scaling == nullptr) return;
    const std::string field = j.contains("rope_parameters") ? "rope_parameters" : "rope_scaling";
    std::string type = hf_config_field(*scaling, "rope_type", std::string(), path);
    if (type.empty()) type = hf_config_field(*scaling, "type", std::string("default"), path);
    if (type == "default") return;
    if (type != "llama3") {
        throw InputError(fmt::format("{}: {}.rope_type = \"{}\" is not supported", path, field, type),
                         "lmforge computes rotary positions unscaled (\"default\") or with Llama 3's rule (\"llama3\")");
    }
    kernels::Llama3RopeScaling s;
    s.factor = hf_config_field(*scaling, "factor", s.factor, path);
    s.low_freq_factor = hf_config_field(*scaling, "low_freq_factor", s.low_freq_factor, path);
    s.high_freq_factor = hf_config_field(*scaling, "high_freq_factor", s.high_freq_factor, path);
    s.original_max_position =
        hf_config_field(*scaling, "original_max_position_embeddings", s.original_max_position, path);
    c.rope_scaling = s;
}

// What lmforge computes: SiLU, no biases, head_dim = hidden_size / heads.
void check_supported(const json& j, const std::string& path, const LlamaConfig& c) {
    const auto fail = [&](const std::string& field, const std::string& what) {
        throw InputError(fmt::format("{}: {} {}", path, field, what));
    };
    const auto act = hf_config_field(j, "hidden_act", std::string("silu"), path);
    if (act != "silu") fail("hidden_act", fmt::format("= \"{}\" is not supported (lmforge computes silu)", act));
    if (hf_config_field(j, "attention_bias", false, path)) fail("attention_bias", "= true is not supported");
    if (hf_config_field(j, "mlp_bias", false, path)) fail("mlp_bias", "= true is not supported");
    if (hf_config_field(j, "pretraining_tp", int64_t{1}, path) != 1) fail("pretraining_tp", "other than 1 is not supported");
    const int64_t head_dim = hf_config_field(j, "head_dim", c.head_size(), path);
    if (head_dim != c.head_size()) {
        fail("head_dim", fmt::format("= {} is not hidden_size / num_attention_heads = {}: not supported", head_dim,
                                     c.head_size()));
    }
}

LlamaConfig parse_llama_config(const json& j, const std::string& path) {
    const auto model_type = hf_config_field(j, "model_type", std::string(), path);
    if (model_type != "llama") {
        throw InputError(fmt::format("{}: model_type = \"{}\" is not supported", path, model_type),
                         "lmforge imports Llama-architecture models (model_type \"llama\")");
    }
    const std::string arch = hf_architecture(j, path, {"LlamaForCausalLM", "LlamaForSequenceClassification"});
    const auto integer = [&](const char* field) -> int64_t {
        if (!j.contains(field) || !j[field].is_number_integer()) {
            throw InputError(fmt::format("{}: {} is missing or not an integer", path, field));
        }
        return j[field].get<int64_t>();
    };
    LlamaConfig c;
    c.n_layer = integer("num_hidden_layers");
    c.n_head = integer("num_attention_heads");
    c.n_kv_head = hf_config_field(j, "num_key_value_heads", c.n_head, path);
    c.n_embd = integer("hidden_size");
    c.intermediate = integer("intermediate_size");
    c.vocab_size = integer("vocab_size");
    c.block_size = integer("max_position_embeddings");
    c.rms_norm_eps = hf_config_field(j, "rms_norm_eps", 1e-6, path);
    c.tie_embeddings = hf_config_field(j, "tie_word_embeddings", false, path);
    if (arch == "LlamaForSequenceClassification") c.num_labels = hf_num_labels(j, path);
    parse_rope(j, path, c);
    try {
        c.validate();
    } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {}", path, e.what()), e.hint());
    }
    check_supported(j, path, c);
    return c;
}

}  // namespace

LlamaConfig read_hf_llama_config(const std::string& dir) {
    const std::string path = dir + "/config.json";
    return read_hf_config(path, [&](const json& j) { return parse_llama_config(j, path); });
}

void load_hf_llama_weights(Llama& model, const std::string& dir) {
    const HfWeights file(dir);
    float* params = model.params().data();
    for (const ParamSpec& s : model.layout().specs()) read_hf_tensor(file, s.name, s, params);
    // Saved although tied, by some writers: it must be the embedding.
    if (model.config().tie_embeddings) {
        check_tied_copy(file, "lm_head.weight", model.layout().find("model.embed_tokens.weight"), params);
    }
    model.weights_changed();
}

json hf_eos_id(const Tokenizer* tokenizer, int64_t vocab_size) {
    if (tokenizer == nullptr) return nullptr;
    const std::optional<TokenId> eot = tokenizer->eot_id();
    if (!eot.has_value() || *eot >= vocab_size) return nullptr;
    return static_cast<int64_t>(*eot);
}

json hf_llama_config(const LlamaConfig& c, const json& eos_id, const std::vector<std::string>& label_names) {
    json config = {{"architectures", {c.num_labels > 0 ? "LlamaForSequenceClassification" : "LlamaForCausalLM"}},
                   {"model_type", "llama"},
                   {"num_hidden_layers", c.n_layer},
                   {"num_attention_heads", c.n_head},
                   {"num_key_value_heads", c.n_kv_head},
                   {"hidden_size", c.n_embd},
                   {"intermediate_size", c.intermediate},
                   {"head_dim", c.head_size()},
                   {"vocab_size", c.vocab_size},
                   {"max_position_embeddings", c.block_size},
                   {"hidden_act", "silu"},
                   {"rms_norm_eps", c.rms_norm_eps},
                   {"rope_theta", c.rope_theta},
                   {"rope_scaling", nullptr},
                   {"attention_bias", false},
                   {"attention_dropout", 0.0},
                   {"mlp_bias", false},
                   {"pretraining_tp", 1},
                   {"initializer_range", 0.02},
                   {"tie_word_embeddings", c.tie_embeddings},
                   {"use_cache", true},
                   {"bos_token_id", eos_id},
                   {"eos_token_id", eos_id},
                   {"torch_dtype", "float32"}};
    if (c.rope_scaling) {
        config["rope_scaling"] = {{"rope_type", "llama3"},
                                  {"factor", c.rope_scaling->factor},
                                  {"low_freq_factor", c.rope_scaling->low_freq_factor},
                                  {"high_freq_factor", c.rope_scaling->high_freq_factor},
                                  {"original_max_position_embeddings", c.rope_scaling->original_max_position}};
    }
    if (c.num_labels > 0) {
        add_hf_label_maps(config, c.num_labels, label_names);
        config["pad_token_id"] = eos_id;
    }
    return config;
}

void save_hf_llama(const Llama& model, const std::string& dir, const json& eos_id,
                   const std::vector<std::string>& label_names, Dtype dtype,
                   const std::vector<std::pair<std::string, std::string>>& files) {
    save_hf_directory(dir, hf_llama_config(model.config(), eos_id, label_names), model, dtype, nullptr, files);
}

}  // namespace lmforge
