// lmforge prepare: text files, directories and JSONL to token shards.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <optional>

#include "backend/threads.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "data/data_home.h"
#include "data/prepare.h"

namespace lmforge::cli {

void add_prepare_command(CLI::App& app) {
    struct Flags {
        PrepareOptions opts;
        std::string dir;
        std::optional<int> threads;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("prepare", "Tokenize text into token shards (llm.c format)");
    cmd->add_option("--input", f->opts.inputs, "Text files, directories, .jsonl files")->required();
    cmd->add_option("--output", f->opts.output, "Directory to create")->required();
    cmd->add_option("--tokenizer", f->opts.tokenizer, "gpt2, char, or a tokenizer path")->capture_default_str();
    cmd->add_option("--val-fraction", f->opts.val_fraction, "Share for validation: of the documents, or of the tokens where that rounds to none")
        ->capture_default_str();
    cmd->add_option("--shard-tokens", f->opts.shard_tokens, "Tokens per shard")
        ->check(integer_at_least(1))->capture_default_str();
    cmd->add_option("--jsonl-field,--text-field", f->opts.jsonl_field, "Field (JSONL) or column (CSV) that holds the text")
        ->capture_default_str();
    cmd->add_option("--label-field", f->opts.label_field,
                    "Labelled examples for classification: the label's field or CSV column");
    cmd->add_flag("--instructions", f->opts.instructions,
                  "Instruction examples for generative fine-tuning: JSONL of instruction/input/output (Alpaca) or "
                  "prompt/response");
    cmd->add_option("--max-len", f->opts.max_len, "Labelled, instructions: tokens per example (cut or padded)")
        ->check(integer_at_least(1))->capture_default_str();
    cmd->add_option("--test-fraction", f->opts.test_fraction, "Labelled and instruction data: share of examples for testing")
        ->capture_default_str();
    cmd->add_option("--seed", f->opts.seed, "Seed of the splits")->capture_default_str();
    cmd->add_option("--threads", f->threads, "Threads (default: every core)")->check(integer_at_least(1));
    cmd->add_option("--dir", f->dir, "Data home (for gpt2's files)");
    cmd->add_flag("--overwrite", f->opts.overwrite, "Replace the output directory if it exists");
    cmd->callback([f] {
        backend::set_threads(f->threads.value_or(backend::hardware_threads()), "--threads");
        f->opts.data_home = data_home(f->dir);
        const PrepareReport r = prepare(f->opts);
        if (f->opts.instructions) {
            fmt::print("prepared {}: {} instruction examples ({})\n", f->opts.output, r.documents, r.format);
            fmt::print("  tokenizer {} ({} tokens); at most {} tokens per example, {} responses cut to fit; {:.2f} s\n",
                       r.tokenizer_kind, r.vocab_size, f->opts.max_len, r.truncated, r.seconds);
            fmt::print("  train {}, val {}, test {}\n", r.train_documents, r.val_documents, r.test_documents);
            return;
        }
        if (!f->opts.label_field.empty()) {
            fmt::print("prepared {}: {} labelled examples, classes {}\n", f->opts.output, r.documents,
                       fmt::join(r.labels, ", "));
            fmt::print("  tokenizer {} ({} tokens); {} tokens per example, {} examples cut to fit; {:.2f} s\n",
                       r.tokenizer_kind, r.vocab_size, f->opts.max_len, r.truncated, r.seconds);
            fmt::print("  train {}, val {}, test {}\n", r.train_documents, r.val_documents, r.test_documents);
            return;
        }
        fmt::print("prepared {}: {} documents from {} files, {:.1f} MB of text\n", f->opts.output, r.documents,
                   r.files, r.bytes / 1e6);
        fmt::print("  tokenizer {} ({} tokens), {} threads: {:.1f} MB/s tokenizing, {:.2f} s in all\n",
                   r.tokenizer_kind, r.vocab_size, backend::max_threads(), r.bytes / 1e6 / r.encode_seconds,
                   r.seconds);
        fmt::print("  train: {} documents, {} tokens\n", r.train_documents, r.train_tokens);
        fmt::print("  val:   {} documents, {} tokens{}\n", r.val_documents, r.val_tokens,
                   r.split == "tokens" ? " (too few documents to split: the last tokens instead)" : "");
        fmt::print("  shards: {}\n", fmt::join(r.shards, ", "));
    });
}

}  // namespace lmforge::cli
