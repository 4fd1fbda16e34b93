#include "model/bert_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cfloat>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/error.h"
#include "io/json_fields.h"
#include "model/config_checks.h"

namespace lmforge {

namespace {

// DistilBERT of shape c: bert-base's width with half its layers is distilbert-base.
BertConfig distilbert(BertConfig c) {
    c.family = BertFamily::DistilBert;
    c.type_vocab_size = 0;
    return c;
}

const std::vector<std::pair<std::string, BertConfig>>& presets() {
    // {n_layer, n_head, hidden, intermediate}
    static const std::vector<std::pair<std::string, BertConfig>> table = {
        {"bert-tiny", {2, 2, 128, 512}},      {"bert-mini", {4, 4, 256, 1024}},
        {"bert-small", {4, 8, 512, 2048}},    {"bert-medium", {8, 8, 512, 2048}},
        {"bert-base", {12, 12, 768, 3072}},   {"bert-large", {24, 16, 1024, 4096}},
        {"distilbert-base", distilbert({6, 12, 768, 3072})},
    };
    return table;
}


}  // namespace

void BertConfig::validate() const {
    require_positive("n_layer", n_layer);
    require_positive("n_head", n_head);
    require_positive("hidden", hidden);
    require_positive("intermediate", intermediate);
    require_positive("vocab_size", vocab_size);
    require_positive("max_position", max_position);
    if (distil() && type_vocab_size != 0) {
        throw InputError(fmt::format("type_vocab_size = {} must be 0 for DistilBERT, which has no token types",
                                     type_vocab_size));
    }
    if (!distil()) require_positive("type_vocab_size", type_vocab_size);
    if (hidden % n_head != 0) {
        throw InputError(fmt::format("hidden = {} is not divisible by n_head = {}", hidden, n_head),
                         "choose hidden as a multiple of n_head (BERT-base: 768 and 12)");
    }
    // Query, key and value are separate tensors (Hugging Face's names) that run as one fused
    // GEMM: that needs them back to back in the 64-byte-aligned flat buffer.
    if (hidden % 16 != 0) {
        throw InputError(fmt::format("hidden = {} is not a multiple of 16", hidden),
                         "lmforge fuses query, key and value into one GEMM; choose hidden as a multiple of 16");
    }
    if (num_labels < 0 || num_labels == 1) {
        throw InputError(fmt::format("num_labels = {} must be 0 (a masked LM) or at least 2", num_labels));
    }
    if (!(layer_norm_eps > 0.0f)) {
        throw InputError(fmt::format("layer_norm_eps = {} must be positive", layer_norm_eps));
    }
    if (vocab_size > (int64_t{1} << 31) - 64) {
        throw InputError(fmt::format("vocab_size = {} does not fit 32-bit token ids", vocab_size));
    }
    const double H = static_cast<double>(hidden), I = static_cast<double>(intermediate);
    require_parameters_within_bounds(
        (static_cast<double>(vocab_size) + static_cast<double>(max_position) + static_cast<double>(type_vocab_size)) * H +
        static_cast<double>(n_layer) * (4 * H * H + 2 * H * I + 9 * H + I) + static_cast<double>(num_labels) * (H + 1));
}

std::string BertConfig::to_json() const {
    return nlohmann::json{{"arch", arch()},
                          {"n_layer", n_layer},
                          {"n_head", n_head},
                          {"hidden", hidden},
                          {"intermediate", intermediate},
                          {"vocab_size", vocab_size},
                          {"max_position", max_position},
                          {"type_vocab_size", type_vocab_size},
                          {"num_labels", num_labels},
                          {"layer_norm_eps", layer_norm_eps}}
        .dump();
}

BertConfig BertConfig::from_json(const std::string& text, const std::string& file) {
    const auto j = nlohmann::json::parse(text);
    // Checked reads: nlohmann would cut 1.5 to 1, and convert 1e300 to an integer or a float
    // with undefined behaviour.
    const auto size = [&](const char* key) { return json_int(j, key, 0, kMaxCount, file); };
    BertConfig c;
    if (j.contains("arch") && j["arch"] == "distilbert") c.family = BertFamily::DistilBert;
    c.n_layer = size("n_layer");
    c.n_head = size("n_head");
    c.hidden = size("hidden");
    c.intermediate = size("intermediate");
    c.vocab_size = size("vocab_size");
    c.max_position = size("max_position");
    c.type_vocab_size = size("type_vocab_size");
    c.num_labels = size("num_labels");
    c.layer_norm_eps = static_cast<float>(json_number(j, "layer_norm_eps", 0, FLT_MAX, file));
    return c;
}

BertConfig BertConfig::preset(const std::string& name) {
    for (const auto& [key, cfg] : presets()) {
        if (key == name) return cfg;
    }
    throw InputError(fmt::format("unknown BERT preset '{}'", name),
                     fmt::format("choose one of: {}", fmt::join(preset_names(), ", ")));
}

std::vector<std::string> BertConfig::preset_names() {
    std::vector<std::string> names;
    for (const auto& entry : presets()) names.push_back(entry.first);
    return names;
}

bool BertConfig::is_preset(const std::string& name) {
    for (const auto& entry : presets()) {
        if (entry.first == name) return true;
    }
    return false;
}

}  // namespace lmforge
