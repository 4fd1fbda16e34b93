// lmforge eval --checkpoint DIR --data DIR: validation loss and perplexity, as JSON.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "backend/threads.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "io/checkpoint.h"
#include "train/evaluator.h"

namespace lmforge::cli {

void add_eval_command(CLI::App& app) {
    struct Flags {
        std::string checkpoint, data, split = "val";
        int64_t batches = 0, batch_size = 8, seq_len = 0;
        std::optional<int> threads;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("eval", "Evaluate a checkpoint: loss and perplexity on a split, as JSON");
    cmd->add_option("--checkpoint", f->checkpoint, "Checkpoint directory (model.safetensors)")->required();
    cmd->add_option("--data", f->data, "Directory of token shards")->required();
    cmd->add_option("--split", f->split, "Shards to read: val or train")->capture_default_str();
    cmd->add_option("--batches", f->batches, "Batches to evaluate; 0: the whole split")
        ->check(integer_at_least(0))->capture_default_str();
    cmd->add_option("--batch-size", f->batch_size, "Sequences per batch")->check(integer_at_least(1))->capture_default_str();
    cmd->add_option("--seq-len", f->seq_len, "Sequence length; 0: the model's block_size")->check(integer_at_least(0));
    cmd->add_option("--threads", f->threads, "Threads (default: every core)")->check(integer_at_least(1));
    cmd->callback([f] {
        backend::set_threads(f->threads.value_or(backend::hardware_threads()));
        const std::string weights = f->checkpoint + "/model.safetensors";
        const Gpt2Config cfg = read_model_config(weights);
        auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
        Gpt2 model(cfg, *gemm);
        load_model_weights(model, weights);
        const int64_t T = f->seq_len > 0 ? f->seq_len : cfg.block_size;
        model.plan(f->batch_size, T);
        DataLoader loader({f->data, f->split, f->batch_size, T, 0, 1, false, 0, cfg.vocab_size});
        const EvalResult r = evaluate(model, loader, f->batches);
        const nlohmann::ordered_json j = {{"checkpoint", f->checkpoint}, {"data", f->data}, {"split", f->split},
                                          {"loss", r.loss}, {"perplexity", r.perplexity}, {"batches", r.batches},
                                          {"tokens", r.tokens}, {"seq_len", T}};
        fmt::print("{}\n", j.dump());
    });
}

}  // namespace lmforge::cli
