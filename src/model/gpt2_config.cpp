#include "model/gpt2_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "core/error.h"
#include "io/json_fields.h"
#include "model/config_checks.h"

namespace lmforge {

namespace {

const std::vector<std::pair<std::string, Gpt2Config>>& presets() {
    // {n_layer, n_head, n_embd, vocab_size, block_size}
    static const std::vector<std::pair<std::string, Gpt2Config>> table = {
        {"gpt2", {12, 12, 768, 50257, 1024}},
        {"gpt2-medium", {24, 16, 1024, 50257, 1024}},
        {"gpt2-large", {36, 20, 1280, 50257, 1024}},
        {"gpt2-xl", {48, 25, 1600, 50257, 1024}},
        {"gpt2-mini", {6, 6, 384, 50257, 1024}},
        {"gpt2-micro", {4, 4, 256, 50257, 1024}},
        {"gpt2-nano", {2, 2, 128, 50257, 1024}},
    };
    return table;
}


}  // namespace

void Gpt2Config::validate() const {
    require_positive("n_layer", n_layer);
    require_positive("n_head", n_head);
    require_positive("n_embd", n_embd);
    require_positive("vocab_size", vocab_size);
    require_positive("block_size", block_size);
    if (n_embd % n_head != 0) {
        throw InputError(
            fmt::format("n_embd = {} is not divisible by n_head = {}", n_embd, n_head),
            "choose n_embd as a multiple of n_head (GPT-2: 768 and 12)");
    }
    if (num_labels < 0 || num_labels == 1) {
        throw InputError(fmt::format("num_labels = {} must be 0 (a language model) or at least 2", num_labels));
    }
    if (vocab_size > (int64_t{1} << 31) - 64) {
        throw InputError(fmt::format("vocab_size = {} does not fit 32-bit token ids", vocab_size));
    }
    const double C = static_cast<double>(n_embd);
    require_parameters_within_bounds((static_cast<double>(vocab_size) + static_cast<double>(block_size)) * C +
                                     static_cast<double>(n_layer) * (12 * C * C + 13 * C) +
                                     static_cast<double>(num_labels) * C);
}

std::string Gpt2Config::to_json() const {
    return nlohmann::json{{"arch", "gpt2"},           {"n_layer", n_layer},       {"n_head", n_head},
                          {"n_embd", n_embd},         {"vocab_size", vocab_size}, {"block_size", block_size},
                          {"num_labels", num_labels}}
        .dump();
}

Gpt2Config Gpt2Config::from_json(const std::string& text, const std::string& file) {
    const auto j = nlohmann::json::parse(text);
    // Checked reads: nlohmann would cut 1.5 to 1, and convert 1e300 with undefined behaviour.
    const auto size = [&](const char* key) { return json_int(j, key, 0, kMaxCount, file); };
    return {size("n_layer"), size("n_head"), size("n_embd"), size("vocab_size"), size("block_size"),
            j.contains("num_labels") ? size("num_labels") : 0};
}

Gpt2Config Gpt2Config::preset(const std::string& name) {
    for (const auto& [key, cfg] : presets()) {
        if (key == name) return cfg;
    }
    throw InputError(fmt::format("unknown model preset '{}'", name),
                     fmt::format("choose one of: {}", fmt::join(preset_names(), ", ")));
}

std::vector<std::string> Gpt2Config::preset_names() {
    std::vector<std::string> names;
    for (const auto& entry : presets()) names.push_back(entry.first);
    return names;
}

}  // namespace lmforge
