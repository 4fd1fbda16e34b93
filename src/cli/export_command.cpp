// lmforge export --checkpoint CKPT --hf DIR: an lmforge checkpoint as a Hugging Face directory
// that transformers' from_pretrained loads: GPT-2 (with the run's GPT-2 tokenizer as vocab.json
// + merges.txt when it has one) or BERT (with the run's [PAD] id as pad_token_id).
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/run_tokenizer.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "data/data_home.h"
#include "io/checkpoint.h"
#include "io/hf_bert.h"
#include "io/hf_gpt2.h"
#include "tokenizer/encoder_specials.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge::cli {

void add_export_command(CLI::App& app) {
    struct Flags {
        std::string checkpoint, hf;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("export", "Export a checkpoint as a Hugging Face GPT-2 or BERT directory");
    cmd->add_option("--checkpoint", f->checkpoint, "Checkpoint directory (model.safetensors)")->required();
    cmd->add_option("--hf", f->hf, "Directory to write (config.json, model.safetensors)")->required();
    cmd->callback([f] {
        if (path_within(f->checkpoint, f->hf)) {
            throw InputError(fmt::format("--hf {} holds the checkpoint {}: it would be replaced", f->hf, f->checkpoint),
                             "choose another --hf directory");
        }
        const std::string weights = f->checkpoint + "/model.safetensors";
        if (read_model_arch(weights) == "bert") {
            auto gemm = backend::make_gemm(backend::GemmKind::Naive);  // no GEMM runs: weights only
            Bert model(read_bert_config(weights), *gemm);
            load_model_weights(model, weights);
            // lmforge's encoder specials follow the run's tokenizer's ids, [PAD] first; a model
            // of another vocabulary (imported, say) keeps transformers' default.
            std::optional<int64_t> pad;
            if (const std::string dir = find_run_tokenizer(f->checkpoint); !dir.empty()) {
                const EncoderSpecials sp = EncoderSpecials::after(load_tokenizer(dir, data_home())->vocab_size());
                if (sp.vocab_size == model.config().vocab_size) pad = sp.pad;
            }
            if (!pad) {
                log::warn("no run tokenizer whose ids this model's vocabulary extends: config.json names no "
                          "pad_token_id (transformers then takes 0)");
            }
            save_hf_bert(model, f->hf, pad);
            fmt::print("exported {} to {} ({})\n", f->checkpoint, f->hf,
                       model.num_labels() > 0 ? "BertForSequenceClassification" : "BertForMaskedLM");
            return;
        }
        const Gpt2Config cfg = read_model_config(weights);
        auto gemm = backend::make_gemm(backend::GemmKind::Naive);  // no GEMM runs: weights only
        Gpt2 model(cfg, *gemm);
        load_model_weights(model, weights);
        const std::string tokenizer_dir = find_run_tokenizer(f->checkpoint);
        const auto tokenizer = tokenizer_dir.empty() ? nullptr : load_tokenizer(tokenizer_dir, data_home());
        const bool with_tokenizer = save_hf_gpt2(model, f->hf, tokenizer.get());
        fmt::print("exported {} to {} ({}{})\n", f->checkpoint, f->hf,
                   cfg.num_labels > 0 ? "GPT2ForSequenceClassification" : "GPT2LMHeadModel",
                   with_tokenizer ? ", tokenizer as vocab.json + merges.txt" : "");
    });
}

}  // namespace lmforge::cli
