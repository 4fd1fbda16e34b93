// Labelled texts for classification tests, as JSONL lines {"text": ..., "label": ...}.
#pragma once

#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace lmforge::test {

// Three classes of short texts: "sport" texts hold "goal" or "match", "weather" ones "rain"
// or "wind", "food" ones "bread" or "soup", among shared filler words.
inline std::string labelled_texts(int n) {
    const char* filler[] = {"the", "a", "today", "we", "saw", "some", "very", "and", "then", "it"};
    const char* cue[3][2] = {{"goal", "match"}, {"rain", "wind"}, {"bread", "soup"}};
    const char* label[3] = {"sport", "weather", "food"};
    std::mt19937 rng(5);
    std::string out;
    for (int i = 0; i < n; i++) {
        const int c = static_cast<int>(rng() % 3);
        std::string text;
        const int len = 3 + static_cast<int>(rng() % 5), at = static_cast<int>(rng() % len);
        for (int k = 0; k < len; k++) text += std::string(k ? " " : "") + (k == at ? cue[c][rng() % 2] : filler[rng() % 10]);
        out += nlohmann::json{{"text", text}, {"label", label[c]}}.dump() + "\n";
    }
    return out;
}

}  // namespace lmforge::test
