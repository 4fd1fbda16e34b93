// lmforge train CONFIG.toml [--set section.key=value ...] [--resume]
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "train/stop_request.h"
#include "train/trainer.h"

namespace lmforge::cli {

namespace {

// What rank 0 prints at the end; a stopped run exits with 128 + the signal, as a shell reports
// a process its signal ended.
void report(const TrainSummary& s) {
    if (s.stopped_by != 0) {
        if (s.rank == 0) {
            fmt::print("stopped {} at step {} by {}: checkpoint {}; the same command goes on from there\n", s.run_dir,
                       s.steps, signal_name(s.stopped_by), s.checkpoint);
            for (const std::string& p : s.plots) fmt::print("plot: {}\n", p);
        }
        // From rank 0 only: mpirun aborts the job when a process exits non-zero, which could cut
        // rank 0's report.
        throw Stopped{s.rank == 0 ? 128 + s.stopped_by : 0};
    }
    if (s.rank != 0) return;  // rank 0 reports for the run
    std::string evaluation = s.evaluation.empty() ? "" : ", " + s.evaluation;
    if (!s.multiple_choice.empty()) evaluation += ", " + s.multiple_choice;
    if (s.start_step >= s.steps) {
        fmt::print("{} is complete at step {} (raise train.max_steps or train.epochs to go on){}\n", s.run_dir,
                   s.steps, evaluation);
    } else {
        fmt::print("trained {} to step {} in {:.1f} min ({:.0f} tokens/s): train loss {:.4f}{}\n", s.run_dir,
                   s.steps, s.seconds / 60, s.tokens_per_s, s.train_loss, evaluation);
    }
    for (const std::string& p : s.plots) fmt::print("plot: {}\n", p);
    // Before and after: what the untrained model wrote at step 0, then what the trained one writes.
    for (size_t i = 0; i < s.first_samples.size(); i++) {
        fmt::print("--- sample {}, untrained (step 0) ---\n{}\n", i + 1, s.first_samples[i]);
    }
    const std::string when = s.first_samples.empty() ? "" : fmt::format(", trained (step {})", s.steps);
    for (size_t i = 0; i < s.samples.size(); i++) fmt::print("--- sample {}{} ---\n{}\n", i + 1, when, s.samples[i]);
    fmt::print("{}", s.report);
}

}  // namespace

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
    cmd->callback([f] { report(train({load_config(f->config, f->sets), f->config, f->resume})); });
}

}  // namespace lmforge::cli
