// lmforge import --hf DIR --output CKPT: a Hugging Face GPT-2, BERT or DistilBERT directory
// (config.json + model.safetensors, and a GPT-2 tokenizer if it has one) as an lmforge
// checkpoint, which sample, eval, logits, export and model.init_from read.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "core/file_io.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/hf_bert.h"
#include "checkpoint/hf_common.h"
#include "checkpoint/hf_gpt2.h"
#include "checkpoint/hf_llama.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge::cli {

namespace {

// Hugging Face keeps GPT-2's tokenizer as tokenizer.json, or as vocab.json + merges.txt
// (GPT-2's encoder.json + vocab.bpe under other names, with added_tokens.json). Null when the directory has neither.
std::unique_ptr<Tokenizer> hf_tokenizer(const std::string& dir) {
    namespace fs = std::filesystem;
    if (fs::exists(dir + "/tokenizer.json")) return load_tokenizer_json(dir + "/tokenizer.json");
    if (fs::exists(dir + "/vocab.json") && fs::exists(dir + "/merges.txt")) {
        const std::string added = dir + "/added_tokens.json";
        return load_gpt2_files(dir + "/vocab.json", dir + "/merges.txt", fs::exists(added) ? added : "");
    }
    return nullptr;
}

// A classifier's class names (config.json's id2label) as a classify run keeps them
// (labels.json), so that export names them again.
void save_label_names(const std::string& hf, int64_t num_labels, const std::string& dir) {
    if (num_labels == 0) return;
    const std::vector<std::string> names = hf_label_names(hf);
    if (static_cast<int64_t>(names.size()) == num_labels) {
        write_text_atomic(dir + "/labels.json", nlohmann::json{{"labels", names}}.dump(2) + "\n");
    }
}

// Writes the checkpoint of a causal model: its weights, the directory's tokenizer where it has
// one, and a classifier's class names. Returns whether a tokenizer was written.
bool publish_causal(const Model& model, const std::string& hf, const std::string& output) {
    const auto tokenizer = hf_tokenizer(hf);
    // Ids past the model's vocabulary would fail at the first text that holds them.
    if (tokenizer && tokenizer->vocab_size() > model.vocab_size()) {
        throw InputError(fmt::format("{}: its tokenizer has {} tokens, the model's vocabulary {}", hf,
                                     tokenizer->vocab_size(), model.vocab_size()),
                         "the directory's tokenizer files belong to another model");
    }
    publish_directory(output, [&](const std::string& tmp) {
        save_model_weights(model, tmp + "/model.safetensors");
        if (tokenizer) tokenizer->save(tmp + "/tokenizer");
        save_label_names(hf, model.num_labels(), tmp);
    });
    return tokenizer != nullptr;
}

void import_llama(const std::string& hf, const std::string& output) {
    const LlamaConfig cfg = read_hf_llama_config(hf);
    auto gemm = backend::make_gemm(backend::GemmKind::Naive);  // no GEMM runs: weights only
    Llama model(cfg, *gemm);
    load_hf_llama_weights(model, hf);
    const bool with_tokenizer = publish_causal(model, hf, output);
    fmt::print("imported {} (Llama, {} layers, {} heads ({} key/value), width {}, vocabulary {}, context {}: {} "
               "parameters){} into {}\n",
               hf, cfg.n_layer, cfg.n_head, cfg.n_kv_head, cfg.n_embd, cfg.vocab_size, cfg.block_size,
               model.layout().count(), with_tokenizer ? " with its tokenizer" : "", output);
}

}  // namespace

void add_import_command(CLI::App& app) {
    struct Flags {
        std::string hf, output;
        bool overwrite = false;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("import", "Import Hugging Face GPT-2, Llama, BERT or DistilBERT weights as an lmforge checkpoint");
    cmd->add_option("--hf", f->hf, "Hugging Face model directory (save_pretrained: config.json, model.safetensors)")
        ->required();
    cmd->add_option("--output", f->output, "Checkpoint directory to write")->required();
    cmd->add_flag("--overwrite", f->overwrite, "Replace the output directory if it exists");
    cmd->callback([f] {
        check_output("--output", f->output, {f->hf}, f->overwrite);
        if (is_hf_bert_dir(f->hf)) {
            const BertConfig cfg = read_hf_bert_config(f->hf);
            auto gemm = backend::make_gemm(backend::GemmKind::Naive);  // no GEMM runs: weights only
            Bert model(cfg, *gemm);
            load_hf_bert_weights(model, f->hf);
            publish_directory(f->output, [&](const std::string& tmp) {
                save_model_weights(model, tmp + "/model.safetensors");
                save_label_names(f->hf, cfg.num_labels, tmp);
            });
            fmt::print("imported {} ({}, {} layers, {} heads, width {}, vocabulary {}, {} positions: {} parameters) into "
                       "{}\n",
                       f->hf, hf_bert_architecture(cfg), cfg.n_layer, cfg.n_head, cfg.hidden, cfg.vocab_size, cfg.max_position,
                       model.layout().count(), f->output);
            return;
        }
        if (hf_model_type(f->hf) == "llama") {
            import_llama(f->hf, f->output);
            return;
        }
        const Gpt2Config cfg = read_hf_gpt2_config(f->hf);
        auto gemm = backend::make_gemm(backend::GemmKind::Naive);  // no GEMM runs: weights only
        Gpt2 model(cfg, *gemm);
        load_hf_gpt2_weights(model, f->hf);
        const bool with_tokenizer = publish_causal(model, f->hf, f->output);
        fmt::print("imported {} ({} layers, {} heads, width {}, vocabulary {}, context {}: {} parameters){} into {}\n",
                   f->hf, cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.vocab_size, cfg.block_size,
                   model.layout().count(), with_tokenizer ? " with its tokenizer" : "", f->output);
    });
}

}  // namespace lmforge::cli
