// GPT-2's shape: layers, heads, width, vocabulary and context, with the named presets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmforge {

struct Gpt2Config {
    int64_t n_layer = 12;
    int64_t n_head = 12;
    int64_t n_embd = 768;
    int64_t vocab_size = 50257;
    int64_t block_size = 1024;  // longest sequence: rows of the position table
    // > 0: a sequence-classification head ("score.weight", num_labels x n_embd) instead of
    // the language-model head; 0: a language model only.
    int64_t num_labels = 0;

    // The vocabulary rounded up to a multiple of 64 (50257 -> 50304) so LM-head rows align;
    // the extra rows are zero and never reach the loss or sampling.
    int64_t padded_vocab() const { return (vocab_size + 63) / 64 * 64; }
    int64_t head_size() const { return n_embd / n_head; }

    // Throws InputError naming the field and its value.
    void validate() const;

    // As a checkpoint records it ({"arch": "gpt2", "n_layer": ...}); from_json throws
    // InputError naming `file` and the field for one missing or not a whole number.
    std::string to_json() const;
    static Gpt2Config from_json(const std::string& text, const std::string& file);

    // gpt2 (124M), gpt2-medium, gpt2-large, gpt2-xl, and the small gpt2-mini, gpt2-micro,
    // gpt2-nano. Throws InputError listing the names for an unknown one.
    static Gpt2Config preset(const std::string& name);
    static std::vector<std::string> preset_names();
};

}  // namespace lmforge
