// Instruction examples for fine-tuning tests, as Alpaca-format JSONL lines.
#pragma once

#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace lmforge::test {

// "Give the opposite of the last word.": an input of 40 random letters (no model can predict
// them) and a word whose opposite is the output.
inline std::string opposites_jsonl(int n) {
    const char* pairs[][2] = {{"hot", "cold"}, {"up", "down"}, {"big", "small"}, {"fast", "slow"},
                              {"early", "late"}, {"light", "dark"}, {"open", "shut"}, {"wet", "dry"}};
    std::mt19937 rng(11);
    std::string out;
    for (int i = 0; i < n; i++) {
        std::string noise;
        for (int k = 0; k < 40; k++) noise += static_cast<char>('a' + rng() % 26);
        const auto& p = pairs[rng() % 8];
        out += nlohmann::json{{"instruction", "Give the opposite of the last word."},
                              {"input", noise + " " + p[0]},
                              {"output", p[1]}}
                   .dump() +
               "\n";
    }
    return out;
}

}  // namespace lmforge::test
