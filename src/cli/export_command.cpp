// lmforge export --checkpoint CKPT --hf DIR: an lmforge checkpoint as a Hugging Face directory
// that transformers' from_pretrained loads: GPT-2 (with the run's GPT-2 tokenizer as vocab.json
// + merges.txt when it has one) or BERT and DistilBERT (with the run's [PAD] id as pad_token_id); a
// classifier's id2label names the run's classes.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_tokenizer.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "data/data_home.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/hf_bert.h"
#include "checkpoint/hf_common.h"
#include "checkpoint/hf_gpt2.h"
#include "checkpoint/hf_llama.h"
#include "checkpoint/peft_adapter.h"
#include "checkpoint/recorded_model.h"
#include "tokenizer/encoder_specials.h"
#include "data/tokenizer_spec.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge::cli {

namespace {

// A classify run's class names, kept in best/labels.json; none for other checkpoints.
std::vector<std::string> checkpoint_label_names(const std::string& checkpoint) {
    const std::string path = checkpoint + "/labels.json";
    if (!std::filesystem::exists(path)) return {};
    std::ifstream in(path);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object() || !j.contains("labels") || !j["labels"].is_array()) {
        throw InputError(fmt::format("{}: not a list of labels", path), "a classify run writes it beside best/'s weights");
    }
    std::vector<std::string> names;
    for (const auto& name : j["labels"]) {
        if (!name.is_string()) throw InputError(fmt::format("{}: a label that is not a string", path));
        names.push_back(name.get<std::string>());
    }
    return names;
}

// The names if the model has as many classes, else none (and a warning).
std::vector<std::string> names_for(std::vector<std::string> names, int64_t num_labels) {
    if (names.empty() || static_cast<int64_t>(names.size()) == num_labels) return names;
    log::warn("labels.json names {} classes, the model has {}: id2label says LABEL_0 ...", names.size(), num_labels);
    return {};
}

// A LoRA checkpoint exports merged (every adapter folded into its weight) as a whole model.
void export_llama(const std::string& checkpoint, const std::string& hf, Dtype dtype) {
    const std::string weights = checkpoint + "/model.safetensors";
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);  // a LoRA model's merge multiplies
    std::unique_ptr<Model> loaded = load_recorded_model(weights, *gemm);
    auto& recorded = static_cast<Llama&>(*loaded);
    const std::unique_ptr<Llama> merged = recorded.adapters_only() ? recorded.merged(*gemm) : nullptr;
    const Llama& model = merged ? *merged : recorded;
    const std::string tokenizer_dir = find_run_tokenizer(checkpoint);
    const auto tokenizer = tokenizer_dir.empty() ? nullptr : open_tokenizer(tokenizer_dir, data_home());
    const auto files = tokenizer ? hf_gpt2_tokenizer_files(*tokenizer, model.config().block_size)
                                 : std::vector<std::pair<std::string, std::string>>{};
    save_hf_llama(model, hf, hf_eos_id(tokenizer.get(), model.vocab_size()),
                  names_for(checkpoint_label_names(checkpoint), model.num_labels()), dtype, files);
    fmt::print("exported {} to {} ({}{}{})\n", checkpoint, hf, merged ? "merged " : "",
               model.num_labels() > 0 ? "LlamaForSequenceClassification" : "LlamaForCausalLM",
               files.empty() ? "" : ", tokenizer as vocab.json + merges.txt");
}

void export_peft(const std::string& checkpoint, const std::string& dir) {
    const std::string weights = checkpoint + "/model.safetensors";
    auto gemm = backend::make_gemm(backend::GemmKind::Naive);  // no GEMM runs: adapters only
    const std::unique_ptr<Model> model = load_recorded_model(weights, *gemm);
    if (!model->adapters_only()) {
        throw InputError(fmt::format("{}: not a LoRA checkpoint (lora.rank 0): --peft writes adapters", checkpoint),
                         "export it whole with --hf");
    }
    save_peft_adapter(static_cast<const Llama&>(*model), dir);
    fmt::print("exported {}'s adapters to {} (PEFT: adapter_model.safetensors, adapter_config.json)\n", checkpoint,
               dir);
}

}  // namespace

void add_export_command(CLI::App& app) {
    struct Flags {
        std::string checkpoint, hf, peft, dtype = "f32";
        bool overwrite = false;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand(
        "export", "Export a checkpoint as a Hugging Face GPT-2, Llama, BERT or DistilBERT directory, or LoRA adapters for PEFT");
    cmd->add_option("--checkpoint", f->checkpoint, "Checkpoint directory (model.safetensors)")->required();
    auto* hf = cmd->add_option("--hf", f->hf, "Directory to write (config.json, model.safetensors); a LoRA run's merged");
    auto* peft = cmd->add_option("--peft", f->peft, "A LoRA run's adapters: directory to write as PEFT does "
                                                    "(adapter_model.safetensors, adapter_config.json)");
    hf->excludes(peft);
    peft->excludes(hf);
    cmd->add_option("--dtype", f->dtype, "Weights' type in model.safetensors: f32, f16 or bf16 (rounded to nearest)");
    cmd->add_flag("--overwrite", f->overwrite, "Replace the output directory if it exists");
    cmd->callback([f] {
        if (!f->peft.empty()) {
            check_output("--peft", f->peft, {f->checkpoint}, f->overwrite);
            export_peft(f->checkpoint, f->peft);
            return;
        }
        if (f->hf.empty()) throw InputError("export needs --hf DIR (or --peft DIR for a LoRA run's adapters)");
        const Dtype dtype = parse_weight_dtype(f->dtype);
        check_output("--hf", f->hf, {f->checkpoint}, f->overwrite);
        const std::string weights = f->checkpoint + "/model.safetensors";
        if (is_bert_family(read_model_arch(weights))) {
            auto gemm = backend::make_gemm(backend::GemmKind::Naive);  // no GEMM runs: weights only
            Bert model(read_bert_config(weights), *gemm);
            load_model_weights(model, weights);
            // lmforge's encoder specials follow the run's tokenizer's ids, [PAD] first; a model
            // of another vocabulary (imported, say) keeps transformers' default.
            std::optional<int64_t> pad;
            if (const std::string dir = find_run_tokenizer(f->checkpoint); !dir.empty()) {
                const EncoderSpecials sp = EncoderSpecials::after(open_tokenizer(dir, data_home())->vocab_size());
                if (sp.vocab_size == model.config().vocab_size) pad = sp.pad;
            }
            if (!pad) {
                log::warn("no run tokenizer whose ids this model's vocabulary extends: config.json names no "
                          "pad_token_id (transformers then takes 0)");
            }
            save_hf_bert(model, f->hf, pad, names_for(checkpoint_label_names(f->checkpoint), model.num_labels()), dtype);
            fmt::print("exported {} to {} ({})\n", f->checkpoint, f->hf, hf_bert_architecture(model.config()));
            return;
        }
        if (read_model_arch(weights) == "llama") {
            export_llama(f->checkpoint, f->hf, dtype);
            return;
        }
        const Gpt2Config cfg = read_model_config(weights);
        auto gemm = backend::make_gemm(backend::GemmKind::Naive);  // no GEMM runs: weights only
        Gpt2 model(cfg, *gemm);
        load_model_weights(model, weights);
        const std::string tokenizer_dir = find_run_tokenizer(f->checkpoint);
        const auto tokenizer = tokenizer_dir.empty() ? nullptr : open_tokenizer(tokenizer_dir, data_home());
        const bool with_tokenizer = save_hf_gpt2(model, f->hf, tokenizer.get(),
                                                 names_for(checkpoint_label_names(f->checkpoint), cfg.num_labels), dtype);
        fmt::print("exported {} to {} ({}{})\n", f->checkpoint, f->hf,
                   cfg.num_labels > 0 ? "GPT2ForSequenceClassification" : "GPT2LMHeadModel",
                   with_tokenizer ? ", tokenizer as vocab.json + merges.txt" : "");
    });
}

}  // namespace lmforge::cli
