// lmforge plot RUN_DIR: the run's loss curves as SVG and PNG.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "train/plot.h"

namespace lmforge::cli {

void add_plot_command(CLI::App& app) {
    auto dir = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("plot", "Draw a run's loss curves (plots/loss.svg, plots/loss.png)");
    cmd->add_option("run_dir", *dir, "Run directory")->required();
    cmd->callback([dir] {
        for (const std::string& p : write_loss_plots(*dir)) fmt::print("{}\n", p);
    });
}

}  // namespace lmforge::cli
