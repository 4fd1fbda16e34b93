// lmforge config keys|check: the configuration schema as a Markdown table (the source of
// docs/config.md), and checking a config file without running it.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "train/config.h"

namespace lmforge::cli {

void add_config_command(CLI::App& app) {
    CLI::App* cfg = app.add_subcommand("config", "Training configuration: every key, or check a file");
    cfg->require_subcommand(1);
    CLI::App* keys = cfg->add_subcommand("keys", "Print every key with its type, default and meaning (Markdown)");
    keys->callback([] {
        fmt::print("| key | type | default | meaning |\n| --- | --- | --- | --- |\n");
        for (const ConfigKey& k : config_keys()) {
            std::string shown = k.default_value;
            for (size_t at = 0; (at = shown.find('|', at)) != std::string::npos; at += 2) shown.replace(at, 1, "\\|");
            fmt::print("| `{}` | {} | `{}` | {} |\n", k.name, k.type, shown, k.doc);
        }
    });
    struct CheckFlags {
        std::string path;
        std::vector<std::string> sets;
    };
    auto f = std::make_shared<CheckFlags>();
    CLI::App* check = cfg->add_subcommand("check", "Parse and validate a config file; print it resolved");
    check->add_option("config", f->path, "TOML file")->required();
    check->add_option("--set", f->sets, "Override: section.key=value");
    check->callback([f] { fmt::print("{}", config_to_toml(load_config(f->path, f->sets))); });
}

}  // namespace lmforge::cli
