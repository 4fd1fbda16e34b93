// lmforge tokenize: standard input to token ids (space separated) and, with --decode, back.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "data/data_home.h"
#include "data/jsonl.h"
#include "data/tokenizer_spec.h"
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
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

// Whitespace-separated decimal ids; InputError naming the first word that is not one.
std::vector<TokenId> parse_ids(const std::string& text) {
    std::vector<TokenId> ids;
    size_t at = 0, word = 0;
    while (true) {
        at = text.find_first_not_of(" \t\r\n", at);
        if (at == std::string::npos) break;
        const size_t end = std::min(text.find_first_of(" \t\r\n", at), text.size());
        const std::string w = text.substr(at, end - at);
        word++;
        size_t used = 0;
        long long v = -1;
        try {
            v = std::stoll(w, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != w.size() || v < 0 || v > INT32_MAX) {
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
    for_each_jsonl(input, "standard input", [&](const nlohmann::json& j, size_t line) {
        print_ids(encode(jsonl_string(j, f.jsonl_field, "standard input", line)));
    });
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
