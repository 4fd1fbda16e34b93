// lmforge tokenize: standard input to token ids (space separated) and, with --decode, back.
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "data/data_home.h"
#include "data/jsonl.h"
#include "data/tokenizer_spec.h"
#include "tokenizer/batch_encode.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge::cli {

namespace {

struct TokenizeFlags {
    std::string tokenizer = "gpt2";
    std::string dir;
    bool decode = false;
    bool allow_special = false;
    std::string jsonl_field;  // batch mode: one JSON object per input line
};

std::string read_stdin() {
    // In blocks: a corpus's worth of ids or JSON lines (100 MB and more) passes through here,
    // and an istreambuf_iterator takes several seconds over it a character at a time.
    std::string text;
    std::vector<char> block(size_t{1} << 20);
    size_t n;
    while ((n = std::fread(block.data(), 1, block.size(), stdin)) > 0) text.append(block.data(), n);
    return text;
}

// Whitespace-separated decimal ids; InputError naming the first word that is not one.
std::vector<TokenId> parse_ids(std::string_view text) {
    std::vector<TokenId> ids;
    size_t at = 0, word = 0;
    while (true) {
        at = text.find_first_not_of(" \t\r\n", at);
        if (at == std::string_view::npos) break;
        const size_t end = std::min(text.find_first_of(" \t\r\n", at), text.size());
        const std::string_view w = text.substr(at, end - at);
        word++;
        int64_t v = -1;
        const auto [stop, error] = std::from_chars(w.data(), w.data() + w.size(), v);
        if (error != std::errc() || stop != w.data() + w.size() || v < 0 || v > INT32_MAX) {
            throw InputError(fmt::format("standard input: word {} ('{}') is not a token id", word, w),
                             "--decode reads ids separated by spaces, as tokenize prints them");
        }
        ids.push_back(static_cast<TokenId>(v));
        at = end;
    }
    return ids;
}

void print_ids(const std::vector<TokenId>& ids) {
    std::string out;
    out.reserve(ids.size() * 6 + 1);
    for (size_t i = 0; i < ids.size(); i++) {
        if (i > 0) out += ' ';
        out += std::to_string(ids[i]);
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
}

void run(const TokenizeFlags& f) {
    const auto tokenizer = open_tokenizer(f.tokenizer, data_home(f.dir));
    const std::string input = read_stdin();
    if (f.decode) {
        const std::string text = tokenizer->decode(parse_ids(input));
        std::fwrite(text.data(), 1, text.size(), stdout);
        return;
    }
    const auto encode = [&](std::string_view text) {
        return f.allow_special ? tokenizer->encode(text) : tokenizer->encode_ordinary(text);
    };
    if (f.jsonl_field.empty()) {
        print_ids(encode(input));
        return;
    }
    std::vector<std::string> texts;
    for_each_jsonl(input, "standard input", [&](const nlohmann::json& j, size_t line) {
        texts.push_back(jsonl_string(j, f.jsonl_field, "standard input", line));
    });
    if (f.allow_special) {
        for (const std::string& text : texts) print_ids(encode(text));
        return;
    }
    // Many texts (a corpus to check against another tokenizer): on every core, as prepare does.
    const std::vector<std::string_view> views(texts.begin(), texts.end());
    for (const std::vector<TokenId>& ids : encode_batch(*tokenizer, views)) print_ids(ids);
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
    auto flags = std::make_shared<TokenizeFlags>();
    CLI::App* cmd = app.add_subcommand("tokenize", "Standard input to token ids, or ids back to text");
    cmd->add_option("--tokenizer", flags->tokenizer, "gpt2, or a tokenizer directory or file")
        ->capture_default_str();
    cmd->add_option("--dir", flags->dir, "Data home (for gpt2's files)");
    auto* decode = cmd->add_flag("--decode", flags->decode, "Read ids, write the text they stand for");
    // Encoding's own flags: with --decode they would be ignored, so they are refused.
    cmd->add_flag("--allow-special", flags->allow_special, "Encode special tokens' text (<|endoftext|>) as their ids")
        ->excludes(decode);
    cmd->add_option("--jsonl-field", flags->jsonl_field,
                    "Read JSON lines; encode this field of each, one line of ids per line")
        ->excludes(decode);
    cmd->callback([flags] { run(*flags); });
}

}  // namespace lmforge::cli
