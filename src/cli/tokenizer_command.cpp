// lmforge tokenizer train: a byte-level BPE trained on text, written as encoder.json +
// vocab.bpe (GPT-2's format) for --tokenizer DIR everywhere.
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "backend/threads.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/error.h"
#include "core/file_io.h"
#include "data/documents.h"
#include "tokenizer/bpe_trainer.h"

namespace lmforge::cli {

void add_tokenizer_command(CLI::App& app) {
    CLI::App* tok = app.add_subcommand("tokenizer", "Train tokenizers");
    tok->require_subcommand(1);
    struct Flags {
        std::vector<std::string> inputs;
        std::string output, jsonl_field = "text";
        int64_t vocab_size = 0;
        bool overwrite = false;
        std::optional<int> threads;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* train = tok->add_subcommand("train", "Train a byte-level BPE (GPT-2's pre-tokenizer) on text");
    train->add_option("--vocab-size", f->vocab_size, "Tokens: 256 bytes + merges + <|endoftext|>")
        ->required()->check(integer_at_least(258));
    train->add_option("--input", f->inputs, "Text files, directories, .jsonl files")->required();
    train->add_option("--output", f->output, "Directory to create (encoder.json, vocab.bpe)")->required();
    train->add_option("--jsonl-field", f->jsonl_field, "Field of each JSON line that holds the text")
        ->capture_default_str();
    train->add_option("--threads", f->threads, "Threads (default: every core)")->check(integer_at_least(1));
    train->add_flag("--overwrite", f->overwrite, "Replace the output directory if it exists");
    train->callback([f] {
        backend::set_threads(f->threads.value_or(backend::hardware_threads()), "--threads");
        check_output("--output", f->output, f->inputs, f->overwrite);
        const DocumentSet set = read_documents(f->inputs, f->jsonl_field);
        BpeTrainReport report;
        const auto bpe = train_bpe(set.docs, f->vocab_size, &report);
        publish_directory(f->output, [&](const std::string& tmp) { bpe->save(tmp); });
        fmt::print("trained {}: {} tokens ({} merges) from {} distinct words of {:.1f} MB in {:.1f} s\n", f->output,
                   bpe->vocab_size(), report.merges, report.words, set.bytes / 1e6, report.seconds);
        if (bpe->vocab_size() < f->vocab_size) {
            fmt::print("  (fewer than {}: no pair occurs twice more)\n", f->vocab_size);
        }
    });
}

}  // namespace lmforge::cli
