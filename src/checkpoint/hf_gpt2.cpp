#include "checkpoint/hf_gpt2.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "checkpoint/hf_common.h"
#include "io/safetensors.h"
#include "tokenizer/tokenizer.h"

namespace lmforge {

using json = nlohmann::json;

namespace {

constexpr const char* kPrefix = "transformer.";

// The body's tensors sit under "transformer."; the classification head does not.
std::string hf_name(const std::string& name, const std::string& prefix) {
    return name == "score.weight" ? name : prefix + name;
}

// The shape config.json J at PATH gives, where lmforge computes it exactly.
Gpt2Config parse_gpt2_config(const json& j, const std::string& path) {
    const auto fail = [&](const std::string& field, const std::string& what, const std::string& hint = "") {
        throw InputError(fmt::format("{}: {} {}", path, field, what), hint);
    };
    const auto model_type = hf_config_field(j, "model_type", std::string(), path);
    if (model_type != "gpt2") {
        fail("model_type", fmt::format("= \"{}\" is not supported", model_type),
             "lmforge imports GPT-2 (model_type \"gpt2\") models");
    }
    const std::string arch =
        hf_architecture(j, path, {"GPT2LMHeadModel", "GPT2Model", "GPT2ForSequenceClassification"});
    const auto integer = [&](const char* field) -> int64_t {
        if (!j.contains(field) || !j[field].is_number_integer()) fail(field, "is missing or not an integer");
        return j[field].get<int64_t>();
    };
    Gpt2Config cfg{integer("n_layer"), integer("n_head"), integer("n_embd"), integer("vocab_size"),
                   integer("n_positions")};
    if (arch == "GPT2ForSequenceClassification") {
        // transformers writes the labels as id2label (num_labels is derived from it).
        cfg.num_labels = hf_num_labels(j, path);
    }
    // Validated first: the checks below compute with the sizes (4 x n_embd would overflow).
    try {
        cfg.validate();
    } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {}", path, e.what()));
    }
    // What lmforge computes: GPT-2's tanh GELU, epsilon 1e-5, a 4x MLP, a tied head.
    const auto act = hf_config_field(j, "activation_function", std::string("gelu_new"), path);
    if (act != "gelu_new" && act != "gelu_pytorch_tanh") {
        fail("activation_function", fmt::format("= \"{}\" is not supported", act), "lmforge computes gelu_new (tanh)");
    }
    if (std::abs(hf_config_field(j, "layer_norm_epsilon", 1e-5, path) - 1e-5) > 1e-12) {
        fail("layer_norm_epsilon", fmt::format("= {} is not supported", j["layer_norm_epsilon"].dump()),
             "lmforge's layernorm uses 1e-5");
    }
    if (hf_config_field(j, "n_inner", 4 * cfg.n_embd, path) != 4 * cfg.n_embd) {
        fail("n_inner", fmt::format("= {} is not supported", j["n_inner"].dump()), "lmforge's MLP is 4 x n_embd");
    }
    if (!hf_config_field(j, "tie_word_embeddings", true, path)) fail("tie_word_embeddings", "= false is not supported");
    if (hf_config_field(j, "scale_attn_by_inverse_layer_idx", false, path)) fail("scale_attn_by_inverse_layer_idx", "= true is not supported");
    if (!hf_config_field(j, "scale_attn_weights", true, path)) fail("scale_attn_weights", "= false is not supported");
    if (hf_config_field(j, "add_cross_attention", false, path)) fail("add_cross_attention", "= true is not supported");
    return cfg;
}

}  // namespace

Gpt2Config read_hf_gpt2_config(const std::string& dir) {
    const std::string path = dir + "/config.json";
    return read_hf_config(path, [&](const json& j) { return parse_gpt2_config(j, path); });
}

void load_hf_gpt2_weights(Gpt2& model, const std::string& dir) {
    const HfWeights file(dir);
    // save_pretrained of GPT2LMHeadModel prefixes "transformer."; older files (and GPT2Model) do not.
    const std::string prefix = file.contains(std::string(kPrefix) + "ln_f.weight") ? kPrefix : "";
    // The embedding and the head are one tensor. Writers keep it under either name, or both
    // (a writer that drops one of two shared tensors may keep only lm_head.weight).
    const std::string embedding = hf_name("wte.weight", prefix);
    const bool head_only = !file.contains(embedding) && file.contains("lm_head.weight");
    float* params = model.params().data();
    for (const ParamSpec& s : model.layout().specs()) {
        const std::string name = hf_name(s.name, prefix);
        read_hf_tensor(file, head_only && name == embedding ? "lm_head.weight" : name, s, params);
    }
    // Saved although tied, by some writers: it must be the embedding.
    if (!head_only) check_tied_copy(file, "lm_head.weight", model.layout().find("wte.weight"), params);
    model.weights_changed();
}

json hf_gpt2_config(const Gpt2Config& c, const Tokenizer* tokenizer, const std::vector<std::string>& label_names) {
    // The end-of-text id begins, ends and pads sequences in transformers: the run's tokenizer's
    // (GPT-2's 50256, the last id of a trained one), or GPT-2's where there is no tokenizer.
    std::optional<TokenId> eot = tokenizer != nullptr ? tokenizer->eot_id() : std::optional<TokenId>(50256);
    if (eot && *eot >= c.vocab_size) eot.reset();
    const json eot_id = eot ? json(*eot) : json(nullptr);
    // Dropout 0: lmforge trains without it, so fine-tuning in transformers continues alike.
    json config = {{"architectures", {c.num_labels > 0 ? "GPT2ForSequenceClassification" : "GPT2LMHeadModel"}},
                   {"model_type", "gpt2"},
                   {"n_layer", c.n_layer},
                   {"n_head", c.n_head},
                   {"n_embd", c.n_embd},
                   {"vocab_size", c.vocab_size},
                   {"n_positions", c.block_size},
                   {"n_inner", nullptr},
                   {"activation_function", "gelu_new"},
                   {"layer_norm_epsilon", 1e-5},
                   {"initializer_range", 0.02},
                   {"attn_pdrop", 0.0},
                   {"embd_pdrop", 0.0},
                   {"resid_pdrop", 0.0},
                   {"summary_first_dropout", 0.0},
                   {"scale_attn_weights", true},
                   {"scale_attn_by_inverse_layer_idx", false},
                   {"reorder_and_upcast_attn", false},
                   {"tie_word_embeddings", true},
                   {"use_cache", true},
                   {"bos_token_id", eot_id},
                   {"eos_token_id", eot_id},
                   {"torch_dtype", "float32"}};
    if (c.num_labels > 0) {
        add_hf_label_maps(config, c.num_labels, label_names);
        // The end-of-text token pads batches (transformers needs a pad id for batches).
        config["pad_token_id"] = eot_id;
    }
    return config;
}

namespace {

// tokenizer_config.json for a tokenizer saved as Hugging Face's tokenizer.json (Llama 3's kind):
// the fast tokenizer class reads it, and the bos and eos tokens are the ones the tokenizer's
// own tokenizer_config.json named, else the end-of-text token, else none.
std::string fast_tokenizer_config(const Tokenizer& tokenizer, int64_t block_size) {
    json config = {{"tokenizer_class", "PreTrainedTokenizerFast"}, {"model_max_length", block_size}};
    const auto text = [&](TokenId id) { return tokenizer.decode(std::vector<TokenId>{id}); };
    for (const auto& [role, id] : tokenizer.roles()) config[role] = text(id);
    if (const std::optional<TokenId> eot = tokenizer.eot_id()) {
        for (const char* role : {"bos_token", "eos_token"}) {
            if (!config.contains(role)) config[role] = text(*eot);
        }
    }
    return config.dump(2) + "\n";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> hf_gpt2_tokenizer_files(const Tokenizer& tokenizer,
                                                                         int64_t block_size) {
    namespace fs = std::filesystem;
    if (tokenizer.kind() != "bpe") return {};  // a character tokenizer has no Hugging Face form
    std::vector<std::pair<std::string, std::string>> files;
    const fs::path saved = fs::temp_directory_path() / temporary_name("lmforge-tokenizer");
    tokenizer.save(saved.string());
    const auto take = [&](const char* from, const char* as) {
        if (fs::exists(saved / from)) files.emplace_back(as, read_text_file((saved / from).string()));
    };
    take("encoder.json", "vocab.json");
    take("vocab.bpe", "merges.txt");
    // transformers reads it too: special tokens that vocab.json alone leaves ordinary.
    take("added_tokens.json", "added_tokens.json");
    // What GPT-2's files cannot hold (Llama 3's pre-tokenizer, say) is saved as tokenizer.json,
    // which transformers' fast tokenizer reads as it is.
    take("tokenizer.json", "tokenizer.json");
    fs::remove_all(saved);
    if (files.size() == 1 && files[0].first == "tokenizer.json") {
        files.emplace_back("tokenizer_config.json", fast_tokenizer_config(tokenizer, block_size));
        return files;
    }
    if (files.size() < 2) return {};
    const std::optional<TokenId> eot = tokenizer.eot_id();
    const std::vector<TokenId> eot_ids = eot ? std::vector<TokenId>{*eot} : std::vector<TokenId>{};
    const std::string end = eot ? tokenizer.decode(eot_ids) : "<|endoftext|>";
    files.emplace_back("tokenizer_config.json", json{{"tokenizer_class", "GPT2Tokenizer"},
                                                     {"model_max_length", block_size},
                                                     {"add_prefix_space", false},
                                                     {"bos_token", end},
                                                     {"eos_token", end},
                                                     {"unk_token", end}}
                                                    .dump(2) + "\n");
    return files;
}

bool save_hf_gpt2(const Gpt2& model, const std::string& dir, const Tokenizer* tokenizer,
                  const std::vector<std::string>& label_names, Dtype dtype) {
    const json config = hf_gpt2_config(model.config(), tokenizer, label_names);
    const auto tokenizer_files =
        tokenizer != nullptr ? hf_gpt2_tokenizer_files(*tokenizer, model.config().block_size)
                             : std::vector<std::pair<std::string, std::string>>{};
    save_hf_directory(dir, config, model, dtype, [](const std::string& name) { return hf_name(name, kPrefix); },
                      tokenizer_files);
    return !tokenizer_files.empty();
}

}  // namespace lmforge
