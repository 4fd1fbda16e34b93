// Sampling text from a model: temperature, top-k and top-p (nucleus) filtering, greedy at
// temperature 0; with the KV cache (a model's Decoder) or, to check it, a full forward pass per
// token. Randomness only from the caller's Rng, so a seed gives the same sample every time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/rng.h"
#include "model/causal_lm.h"

namespace lmforge {

struct SampleOptions {
    int64_t max_new_tokens = 64;
    double temperature = 1.0;  // 0: greedy
    int64_t top_k = 0;         // 0: no limit
    double top_p = 1.0;        // 1: no limit
    std::optional<int32_t> stop_token;  // e.g. <|endoftext|>: generation ends after it
};

// The next token from logits (V of them). scratch is reused between calls.
int32_t sample_token(const float* logits, int64_t V, const SampleOptions& opts, Rng& rng,
                     std::vector<std::pair<float, int32_t>>& scratch);

// Past the model's context (block_size tokens) generation goes on in a sliding window: when
// the context is full, the model starts again from the last sliding_window_keep(block_size)
// tokens, so each later token is conditioned on the last keep to block_size tokens. Halving
// the window (rather than dropping one token, which would re-run the whole window for every
// new token) costs one refill of the cache per keep new tokens.
int64_t sliding_window_keep(int64_t block_size);

// Feeds the prompt (1 to block_size tokens), then generates; on_token sees each new token as
// it comes (for streaming). Stops at max_new_tokens or after the stop token.
std::vector<int32_t> generate(Decoder& decoder, std::span<const int32_t> prompt, const SampleOptions& opts,
                              Rng& rng, const std::function<void(int32_t)>& on_token = {});

// The same without a KV cache: the whole window through the model's forward for every token, so
// the same tokens under greedy decoding. It re-plans the model's activations for each length.
std::vector<int32_t> generate_without_cache(CausalLm& model, std::span<const int32_t> prompt, const SampleOptions& opts,
                                            Rng& rng);

}  // namespace lmforge
