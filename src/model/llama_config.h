// The Llama family's shape (Llama 2 and 3, TinyLlama, SmolLM2, OLMo-style): RMSNorm, rotary
// positions (with Llama 3's frequency scaling), a SwiGLU MLP, grouped-query attention, no
// biases, and tied or untied embeddings; with the named presets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/rope.h"

namespace lmforge {

struct LlamaConfig {
    int64_t n_layer = 2;
    int64_t n_head = 4;
    int64_t n_kv_head = 4;  // num_key_value_heads: divides n_head
    int64_t n_embd = 64;    // hidden_size
    int64_t intermediate = 256;
    int64_t vocab_size = 32000;
    int64_t block_size = 2048;  // max_position_embeddings: the longest sequence
    double rope_theta = 10000.0;
    std::optional<kernels::Llama3RopeScaling> rope_scaling{};  // rope_type "llama3"; none: plain
    double rms_norm_eps = 1e-5;
    bool tie_embeddings = false;  // the LM head is the embedding matrix (SmolLM2, Llama 3.2)
    // > 0: a sequence-classification head ("score.weight", num_labels x n_embd) instead of
    // the language-model head; 0: a language model only.
    int64_t num_labels = 0;

    // The vocabulary rounded up to a multiple of 64 so that LM-head rows align; the extra rows
    // are zero and never reach the loss or sampling.
    int64_t padded_vocab() const { return (vocab_size + 63) / 64 * 64; }
    int64_t head_size() const { return n_embd / n_head; }
    int64_t kv_width() const { return n_kv_head * head_size(); }
    int64_t qkv_width() const { return n_embd + 2 * kv_width(); }

    // Throws InputError naming the field and its value.
    void validate() const;

    // As a checkpoint records it ({"arch": "llama", ...}); from_json throws InputError naming
    // `file` and the field.
    std::string to_json() const;
    static LlamaConfig from_json(const std::string& text, const std::string& file);

    // smollm2-135m, smollm2-360m, tinyllama-1.1b, llama-3.2-1b (also "llama-1b"), and the
    // small llama-nano, llama-micro. Throws InputError listing the names for an unknown one.
    static LlamaConfig preset(const std::string& name);
    static bool is_preset(const std::string& name);
    static std::vector<std::string> preset_names();
};

}  // namespace lmforge
