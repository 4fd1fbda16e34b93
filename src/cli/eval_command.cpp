// lmforge eval --checkpoint DIR --data DIR: validation loss and perplexity, as JSON.
// lmforge eval --checkpoint DIR --multiple-choice FILE.jsonl: HellaSwag-style accuracy and
// the counts it comes from, as JSON (also under mpirun: items sharded over ranks).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "backend/threads.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/run_tokenizer.h"
#include "core/error.h"
#include "data/data_home.h"
#include "distributed/communicator.h"
#include "checkpoint/checkpoint.h"
#include "data/tokenizer_spec.h"
#include "tokenizer/tokenizer_io.h"
#include "checkpoint/recorded_model.h"
#include "train/multiple_choice.h"
#include "train/evaluator.h"

namespace lmforge::cli {

void add_eval_command(CLI::App& app) {
    struct Flags {
        std::string checkpoint, data, split = "val", multiple_choice, tokenizer;
        int64_t batches = 0, batch_size = 8, seq_len = 0;
        std::optional<int> threads;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("eval", "Evaluate a checkpoint: loss and perplexity on a split, as JSON");
    cmd->add_option("--checkpoint", f->checkpoint, "Checkpoint directory (model.safetensors)")->required();
    auto* data = cmd->add_option("--data", f->data, "Directory of token shards");
    auto* mc = cmd->add_option("--multiple-choice", f->multiple_choice,
                               "HellaSwag-format JSONL (ctx, endings, label): score each ending by likelihood");
    data->excludes(mc);
    // Each mode's own flags: one given to the other mode would be ignored, so it is refused.
    cmd->add_option("--tokenizer", f->tokenizer, "Tokenizer for --multiple-choice (default: the run's, else gpt2)")
        ->excludes(data);
    for (CLI::Option* o : {cmd->add_option("--split", f->split, "Shards to read: val or train")->capture_default_str(),
                           cmd->add_option("--batches", f->batches, "Batches to evaluate; 0: the whole split")
                               ->check(integer_at_least(0))
                               ->capture_default_str(),
                           cmd->add_option("--batch-size", f->batch_size, "Sequences per batch")
                               ->check(integer_at_least(1))
                               ->capture_default_str(),
                           cmd->add_option("--seq-len", f->seq_len, "Sequence length; 0: the model's block_size")
                               ->check(integer_at_least(0))}) {
        o->excludes(mc);
    }
    cmd->add_option("--threads", f->threads, "Threads (default: every core)")->check(integer_at_least(1));
    cmd->callback([f] {
        if (f->data.empty() && f->multiple_choice.empty()) {
            throw InputError("eval needs --data DIR or --multiple-choice FILE");
        }
        const auto comm = make_communicator();
        backend::set_threads(f->threads.value_or(default_threads(*comm)), "--threads");
        const std::string weights = f->checkpoint + "/model.safetensors";
        auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
        const std::unique_ptr<CausalLm> lm = load_recorded_causal_lm(weights, *gemm, "eval");
        CausalLm& model = *lm;
        if (!f->multiple_choice.empty()) {
            const std::string saved = find_run_tokenizer(f->checkpoint);
            const auto tokenizer = open_tokenizer(
                !f->tokenizer.empty() ? f->tokenizer : !saved.empty() ? saved : std::string("gpt2"), data_home());
            const auto items = load_multiple_choice(f->multiple_choice, *tokenizer);
            const ChoiceResult r = evaluate_multiple_choice(model, items, *comm);
            if (comm->rank() != 0) return;
            const nlohmann::ordered_json j = {{"checkpoint", f->checkpoint}, {"multiple_choice", f->multiple_choice},
                                              {"items", r.items}, {"accuracy", r.accuracy()},
                                              {"accuracy_norm", r.accuracy_norm()}, {"correct", r.correct},
                                              {"correct_norm", r.correct_norm}, {"processes", comm->size()}};
            fmt::print("{}\n", j.dump());
            return;
        }
        const int64_t T = f->seq_len > 0 ? f->seq_len : model.context_length();
        model.plan(f->batch_size, T);
        DataLoader loader({f->data, f->split, f->batch_size, T, 0, 1, false, 0, model.vocab_size()});
        const LossSum r = evaluate_windows(model, loader, f->batches * f->batch_size);
        if (comm->rank() != 0) return;  // under mpirun every rank computes alike; one answers
        const int64_t all = loader.windows_per_epoch();
        const int64_t windows = f->batches > 0 ? std::min(f->batches * f->batch_size, all) : all;
        const double loss = r.count > 0 ? r.mean() : std::nan("");
        const nlohmann::ordered_json j = {{"checkpoint", f->checkpoint}, {"data", f->data}, {"split", f->split},
                                          {"loss", loss}, {"perplexity", std::exp(loss)},
                                          {"batches", (windows + f->batch_size - 1) / f->batch_size},
                                          {"tokens", r.count}, {"seq_len", T}};
        fmt::print("{}\n", j.dump());
    });
}

}  // namespace lmforge::cli
