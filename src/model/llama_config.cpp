#include "model/llama_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/error.h"
#include "io/json_fields.h"
#include "model/config_checks.h"

namespace lmforge {

namespace {

LlamaConfig shape(int64_t layers, int64_t heads, int64_t kv_heads, int64_t width, int64_t intermediate, int64_t vocab,
                  int64_t context, double theta, bool tied) {
    LlamaConfig c;
    c.n_layer = layers;
    c.n_head = heads;
    c.n_kv_head = kv_heads;
    c.n_embd = width;
    c.intermediate = intermediate;
    c.vocab_size = vocab;
    c.block_size = context;
    c.rope_theta = theta;
    c.tie_embeddings = tied;
    return c;
}

// The shapes of the models' own config.json files.
const std::vector<std::pair<std::string, LlamaConfig>>& presets() {
    static const std::vector<std::pair<std::string, LlamaConfig>> table = [] {
        LlamaConfig llama32 = shape(16, 32, 8, 2048, 8192, 128256, 131072, 500000.0, true);
        llama32.rope_scaling = kernels::Llama3RopeScaling{32.0, 1.0, 4.0, 8192};
        return std::vector<std::pair<std::string, LlamaConfig>>{
            {"smollm2-135m", shape(30, 9, 3, 576, 1536, 49152, 8192, 100000.0, true)},
            {"smollm2-360m", shape(32, 15, 5, 960, 2560, 49152, 8192, 100000.0, true)},
            {"tinyllama-1.1b", shape(22, 32, 4, 2048, 5632, 32000, 2048, 10000.0, false)},
            {"llama-3.2-1b", llama32},
            {"llama-1b", llama32},
            {"llama-micro", shape(4, 8, 2, 256, 704, 50257, 1024, 10000.0, true)},
            {"llama-nano", shape(2, 4, 2, 128, 352, 50257, 1024, 10000.0, true)},
        };
    }();
    return table;
}

void validate_rope(const LlamaConfig& c) {
    if (!(c.rope_theta > 1.0) || !std::isfinite(c.rope_theta)) {
        throw InputError(fmt::format("rope_theta = {} must be a finite number above 1", c.rope_theta));
    }
    if (c.head_size() % 2 != 0) {
        throw InputError(fmt::format("head size {} (hidden_size / num_attention_heads) must be even for rotary "
                                     "positions",
                                     c.head_size()));
    }
    if (!c.rope_scaling) return;
    const kernels::Llama3RopeScaling& s = *c.rope_scaling;
    if (!(s.factor >= 1.0) || !(s.low_freq_factor > 0.0) || !(s.high_freq_factor > s.low_freq_factor) ||
        s.original_max_position <= 0 || !std::isfinite(s.factor) || !std::isfinite(s.high_freq_factor)) {
        throw InputError(fmt::format("rope_scaling: factor {} must be at least 1, low_freq_factor {} above 0, "
                                     "high_freq_factor {} above low_freq_factor, original_max_position_embeddings "
                                     "{} positive",
                                     s.factor, s.low_freq_factor, s.high_freq_factor, s.original_max_position));
    }
}

}  // namespace

void LlamaConfig::validate() const {
    require_positive("n_layer", n_layer);
    require_positive("n_head", n_head);
    require_positive("n_kv_head", n_kv_head);
    require_positive("n_embd", n_embd);
    require_positive("intermediate", intermediate);
    require_positive("vocab_size", vocab_size);
    require_positive("block_size", block_size);
    if (n_embd % n_head != 0) {
        throw InputError(fmt::format("n_embd = {} is not divisible by n_head = {}", n_embd, n_head));
    }
    if (n_head % n_kv_head != 0) {
        throw InputError(fmt::format("num_key_value_heads = {} does not divide num_attention_heads = {}", n_kv_head,
                                     n_head),
                         "grouped-query attention shares each key/value head among n_head / n_kv_head query heads");
    }
    if (!(rms_norm_eps > 0.0) || !(rms_norm_eps < 1.0)) {
        throw InputError(fmt::format("rms_norm_eps = {} must lie in (0, 1)", rms_norm_eps));
    }
    validate_rope(*this);
    if (num_labels < 0 || num_labels == 1) {
        throw InputError(fmt::format("num_labels = {} must be 0 (a language model) or at least 2", num_labels));
    }
    if (vocab_size > (int64_t{1} << 31) - 64) {
        throw InputError(fmt::format("vocab_size = {} does not fit 32-bit token ids", vocab_size));
    }
    const double C = static_cast<double>(n_embd), KV = static_cast<double>(kv_width());
    const double I = static_cast<double>(intermediate), V = static_cast<double>(vocab_size);
    require_parameters_within_bounds(V * C * (tie_embeddings ? 1 : 2) +
                                     static_cast<double>(n_layer) * (2 * C * C + 2 * C * KV + 3 * C * I + 2 * C) +
                                     static_cast<double>(num_labels) * C);
}

std::string LlamaConfig::to_json() const {
    nlohmann::json j{{"arch", "llama"},
                     {"n_layer", n_layer},
                     {"n_head", n_head},
                     {"n_kv_head", n_kv_head},
                     {"n_embd", n_embd},
                     {"intermediate", intermediate},
                     {"vocab_size", vocab_size},
                     {"block_size", block_size},
                     {"rope_theta", rope_theta},
                     {"rms_norm_eps", rms_norm_eps},
                     {"tie_embeddings", tie_embeddings},
                     {"num_labels", num_labels}};
    if (rope_scaling) {
        j["rope_scaling"] = {{"rope_type", "llama3"},
                             {"factor", rope_scaling->factor},
                             {"low_freq_factor", rope_scaling->low_freq_factor},
                             {"high_freq_factor", rope_scaling->high_freq_factor},
                             {"original_max_position_embeddings", rope_scaling->original_max_position}};
    }
    return j.dump();
}

LlamaConfig LlamaConfig::from_json(const std::string& text, const std::string& file) {
    const auto j = nlohmann::json::parse(text);
    const auto size = [&](const char* key) { return json_int(j, key, 0, kMaxCount, file); };
    const auto number = [&](const nlohmann::json& o, const char* key) { return json_number(o, key, 0, 1e300, file); };
    LlamaConfig c = shape(size("n_layer"), size("n_head"), size("n_kv_head"), size("n_embd"), size("intermediate"),
                          size("vocab_size"), size("block_size"), number(j, "rope_theta"), false);
    c.rms_norm_eps = number(j, "rms_norm_eps");
    c.num_labels = size("num_labels");
    if (!j.contains("tie_embeddings") || !j["tie_embeddings"].is_boolean()) {
        throw InputError(fmt::format("{}: tie_embeddings must be true or false", file));
    }
    c.tie_embeddings = j["tie_embeddings"].get<bool>();
    if (j.contains("rope_scaling")) {
        const nlohmann::json& s = j["rope_scaling"];
        c.rope_scaling = kernels::Llama3RopeScaling{number(s, "factor"), number(s, "low_freq_factor"),
                                                    number(s, "high_freq_factor"),
                                                    json_int(s, "original_max_position_embeddings", 1, kMaxCount, file)};
    }
    return c;
}

bool LlamaConfig::is_preset(const std::string& name) {
    for (const auto& entry : presets()) {
        if (entry.first == name) return true;
    }
    return false;
}

LlamaConfig LlamaConfig::preset(const std::string& name) {
    for (const auto& [key, cfg] : presets()) {
        if (key == name) return cfg;
    }
    throw InputError(fmt::format("unknown Llama preset '{}'", name),
                     fmt::format("choose one of: {}", fmt::join(preset_names(), ", ")));
}

std::vector<std::string> LlamaConfig::preset_names() {
    std::vector<std::string> names;
    for (const auto& entry : presets()) names.push_back(entry.first);
    return names;
}

}  // namespace lmforge
