// lmforge plot RUN_DIR: the run's loss curves as SVG and PNG.
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "train/config.h"
#include "train/plot.h"

namespace lmforge::cli {

void add_plot_command(CLI::App& app) {
    auto dir = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("plot", "Draw a run's loss curves (plots/loss.svg, plots/loss.png)");
    cmd->add_option("run_dir", *dir, "Run directory")->required();
    cmd->callback([dir] {
        // The run's resolved config says whether its metrics count steps or epochs.
        std::string x_label = "step";
        try {
            if (std::filesystem::exists(*dir + "/config.toml")) x_label = metrics_x_axis(load_config(*dir + "/config.toml"));
        } catch (const InputError&) {  // an edited config: the curves still draw, by "step"
        }
        for (const std::string& p : write_loss_plots(*dir, x_label)) fmt::print("{}\n", p);
    });
}

}  // namespace lmforge::cli
