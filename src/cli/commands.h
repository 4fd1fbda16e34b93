// One function per subcommand: declares its flags on the app and sets its callback. The
// callbacks hold no logic of their own beyond turning flags into library calls and printing.
#pragma once

#include <CLI/CLI.hpp>

namespace lmforge::cli {

// Thrown by a command that stopped on request before its end, after saying so: main prints
// nothing more and returns `status`.
struct Stopped {
    int status;
};

void add_bench_command(CLI::App& app);
void add_data_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_prepare_command(CLI::App& app);
void add_tokenizer_command(CLI::App& app);
void add_config_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_import_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_logits_command(CLI::App& app);

}  // namespace lmforge::cli
