// Tokenizer speed: encodes documents (each FILE; with --jsonl FIELD each line's FIELD; with
// --split N each document cut at the first space after every N bytes) with 1..N threads and
// prints one JSON line per thread count:
//   {"threads": 1, "mb_per_s": ..., "documents": ..., "bytes": ..., "tokens": ...}
// The best of --repeat runs counts. bench/compare_tiktoken_speed.py runs it beside tiktoken.
//   tokenizer_bench [--threads N] [--repeat R] [--split BYTES] [--jsonl FIELD] FILE...
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "backend/threads.h"
#include "core/timer.h"
#include "data/data_home.h"
#include "tokenizer/batch_encode.h"
#include "data/tokenizer_spec.h"
#include "tokenizer/tokenizer_io.h"

using namespace lmforge;

int main(int argc, char** argv) {
    int max_threads = backend::hardware_threads(), repeat = 5;
    size_t split = 0;
    std::string jsonl_field;
    std::vector<std::string> files;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "--threads" && i + 1 < argc) {
            max_threads = std::stoi(argv[++i]);
        } else if (a == "--repeat" && i + 1 < argc) {
            repeat = std::stoi(argv[++i]);
        } else if (a == "--split" && i + 1 < argc) {
            split = std::stoul(argv[++i]);
        } else if (a == "--jsonl" && i + 1 < argc) {
            jsonl_field = argv[++i];
        } else {
            files.push_back(a);
        }
    }
    std::vector<std::string> texts;
    for (const auto& f : files) {
        std::ifstream in(f, std::ios::binary);
        std::stringstream s;
        s << in.rdbuf();
        if (jsonl_field.empty()) {
            texts.push_back(s.str());
            continue;
        }
        for (std::string line; std::getline(s, line);) {
            texts.push_back(nlohmann::json::parse(line).at(jsonl_field).get<std::string>());
        }
    }
    std::vector<std::string_view> docs;
    for (const std::string& t : texts) {
        if (split == 0) {
            docs.emplace_back(t);
            continue;
        }
        for (size_t at = 0; at < t.size();) {  // short documents: cut at a space
            size_t end = t.find(' ', at + split);
            end = end == std::string::npos ? t.size() : end;
            docs.emplace_back(t.data() + at, end - at);
            at = end;
        }
    }
    size_t bytes = 0;
    for (auto d : docs) bytes += d.size();
    const auto tokenizer = open_tokenizer("gpt2", data_home());
    for (int threads = 1; threads <= max_threads; threads++) {
        backend::set_threads(threads, "--threads");
        double best = 1e30;
        size_t tokens = 0;
        for (int r = 0; r < repeat; r++) {
            Timer t;
            const auto ids = encode_batch(*tokenizer, docs);
            best = std::min(best, t.seconds());
            tokens = 0;
            for (const auto& x : ids) tokens += x.size();
        }
        fmt::print("{{\"impl\": \"lmforge\", \"threads\": {}, \"mb_per_s\": {:.2f}, \"documents\": {}, "
                   "\"bytes\": {}, \"tokens\": {}}}\n",
                   threads, bytes / best / 1e6, docs.size(), bytes, tokens);
    }
}
