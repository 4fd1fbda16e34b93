// lmforge train CONFIG.toml [--set section.key=value ...] [--resume]
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "train/classify_trainer.h"
#include "train/mlm_trainer.h"
#include "train/sft_trainer.h"
#include "train/stop_request.h"
#include "train/trainer.h"

namespace lmforge::cli {

void add_train_command(CLI::App& app) {
    struct Flags {
        std::string config;
        std::vector<std::string> sets;
        bool resume = false;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("train", "Train a model as a TOML config says (docs/config.md)");
    cmd->add_option("config", f->config, "Configuration file (TOML)")->required();
    cmd->add_option("--set", f->sets, "Override a key: section.key=value (repeatable)");
    cmd->add_flag("--resume", f->resume, "Continue from the run directory's latest checkpoint (also done when one exists)");
    cmd->callback([f] {
        const TrainOptions opts{load_config(f->config, f->sets), f->config, f->resume};
        if (f->resume && opts.config.train.task != "lm") {
            // Task runs keep only best/ and their report: nothing to go on from.
            throw InputError(fmt::format("--resume: train.task = \"{}\" trains in one go and keeps no checkpoint to "
                                         "go on from",
                                         opts.config.train.task),
                             "leave out --resume to train again from the start (best/ and the report are replaced)");
        }
        if (opts.config.train.task == "classify") {
            const ClassifySummary s = train_classifier(opts);
            if (s.rank != 0) return;
            fmt::print("{}trained {} for {} epochs ({} steps) in {:.1f} min; best epoch {} (val {} {:.4f}); report: {}\n",
                       s.report_text, s.run_dir, s.epochs, s.steps, s.seconds / 60, s.best_epoch, s.metric,
                       s.best_value, s.report_path);
            return;
        }
        if (opts.config.train.task == "sft") {
            const SftSummary s = train_sft(opts);
            if (s.rank != 0) return;
            for (const auto& [reference, completion] : s.samples) {
                fmt::print("--- reference ---\n{}\n--- greedy completion ---\n{}\n", reference, completion);
            }
            fmt::print("trained {} for {} epochs ({} steps) in {:.1f} min; best epoch {} (val loss {:.4f}); test loss {:.4f} "
                       "(perplexity {:.2f}), exact match {:.4f} of {} responses\n",
                       s.run_dir, s.epochs, s.steps, s.seconds / 60, s.best_epoch, s.best_val_loss, s.test_loss,
                       std::exp(s.test_loss), s.test_exact_match, s.test_examples);
            return;
        }
        if (opts.config.train.task == "mlm") {
            const MlmSummary s = train_mlm(opts);
            if (s.rank != 0) return;
            fmt::print("trained {} for {} steps in {:.1f} min: train mlm loss {:.4f} (masked acc {:.4f}), val mlm loss "
                       "{:.4f} (masked acc {:.4f}); best val loss {:.4f} in {}/best\n",
                       s.run_dir, s.steps, s.seconds / 60, s.train_loss, s.train_accuracy, s.val_loss, s.val_accuracy,
                       s.best_val_loss, s.run_dir);
            return;
        }
        const TrainSummary s = train(opts);
        if (s.stopped_by != 0) {
            if (s.rank == 0) {
                fmt::print("stopped {} at step {} by {}: checkpoint {}; the same command goes on from there\n",
                           s.run_dir, s.steps, signal_name(s.stopped_by), s.checkpoint);
                for (const std::string& p : s.plots) fmt::print("plot: {}\n", p);
            }
            // 128 + the signal, as a shell reports a process its signal ended. From rank 0 only:
            // mpirun aborts the job when a process exits non-zero, which could cut rank 0's report.
            throw Stopped{s.rank == 0 ? 128 + s.stopped_by : 0};
        }
        if (s.rank != 0) return;  // rank 0 reports for the run
        if (s.start_step >= s.steps) {
            fmt::print("{} is complete at step {} (raise train.max_steps to go on): val loss {:.4f} (perplexity {:.2f})\n",
                       s.run_dir, s.steps, s.val_loss, s.val_perplexity);
        } else {
            fmt::print("trained {} to step {} in {:.1f} min ({:.0f} tokens/s): train loss {:.4f}, val loss {:.4f} "
                   "(perplexity {:.2f})\n",
                   s.run_dir, s.steps, s.seconds / 60, s.tokens_per_s, s.train_loss, s.val_loss, s.val_perplexity);
        }
        for (const std::string& p : s.plots) fmt::print("plot: {}\n", p);
        for (size_t i = 0; i < s.samples.size(); i++) fmt::print("--- sample {} ---\n{}\n", i + 1, s.samples[i]);
    });
}

}  // namespace lmforge::cli
