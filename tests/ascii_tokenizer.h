// A character tokenizer file whose 95 printable ASCII characters are ids 0..94: text for the
// small fixture models (vocabulary 101) without a tokenizer of their own.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace lmforge::test {

inline std::string ascii_tokenizer_json() {
    nlohmann::json chars = nlohmann::json::array();
    for (char c = ' '; c <= '~'; c++) chars.push_back(std::string(1, c));
    return nlohmann::json{{"lmforge_tokenizer", "char"}, {"chars", chars}, {"special_tokens", nlohmann::json::object()}}
        .dump();
}

}  // namespace lmforge::test
