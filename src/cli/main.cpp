// lmforge's entry point: parse the subcommand, run it, and turn every failure into one line
// on stderr and an exit status: 2 for the user's input (flags, configs, files), 1 otherwise;
// a run stopped by a signal's request returns 128 + the signal, as a shell reports it.
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <filesystem>

#include "backend/gemm_onednn.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "core/signal_thread.h"
#include "core/version.h"

namespace {

int fail(int status, const std::string& message) {
    const int rank = lmforge::log::rank();  // in a multi-process run, say which process
    fmt::print(stderr, "lmforge: error: {}{}\n", rank >= 0 ? fmt::format("[rank {}] ", rank) : "", message);
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    lmforge::take_signals_on_own_thread();  // before any thread starts: they inherit its mask
    CLI::App app{"lmforge: train GPT-2-class language models on CPUs, in C++"};
    app.set_version_flag("--version", lmforge::version_line() + ", oneDNN " + lmforge::backend::onednn_version());
    app.require_subcommand(1);
    lmforge::cli::add_bench_command(app);
    lmforge::cli::add_data_command(app);
    lmforge::cli::add_tokenize_command(app);
    lmforge::cli::add_prepare_command(app);
    lmforge::cli::add_tokenizer_command(app);
    lmforge::cli::add_config_command(app);
    lmforge::cli::add_train_command(app);
    lmforge::cli::add_eval_command(app);
    lmforge::cli::add_sample_command(app);
    lmforge::cli::add_plot_command(app);
    lmforge::cli::add_import_command(app);
    lmforge::cli::add_export_command(app);
    lmforge::cli::add_logits_command(app);
    const auto known = [&](const char* name) {
        for (const CLI::App* sub : app.get_subcommands({})) {
            if (sub->check_name(name)) return true;
        }
        return false;
    };
    if (argc > 1 && argv[1][0] != '-' && !known(argv[1])) {
        return fail(2, fmt::format("unknown command '{}' (HINT: lmforge --help lists the commands)",
                                   argv[1]));
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        return fail(2, e.what());
    } catch (const lmforge::cli::Stopped& s) {
        return s.status;
    } catch (const lmforge::InputError& e) {
        return fail(2, e.one_line());
    } catch (const lmforge::Error& e) {
        return fail(1, e.one_line());
    } catch (const std::filesystem::filesystem_error& e) {
        // The machine's answer (a file where a directory belongs, a full disk), not a bug.
        return fail(1, e.what());
    } catch (const std::exception& e) {
        return fail(1, fmt::format("internal error: {}", e.what()));
    }
    return 0;
}
