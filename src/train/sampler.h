// Sampling text from a model: temperature, top-k and top-p (nucleus) filtering, greedy at
// temperature 0; with the KV cache (Gpt2Decoder) or, to check it, a full forward pass per
// token. Randomness only from the caller's Rng, so a seed gives the same sample every time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/rng.h"
#include "model/gpt2.h"
#include "model/gpt2_decoder.h"

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

// Feeds the prompt (at least one token), then generates; on_token sees each new token as it
// comes (for streaming). Stops at max_new_tokens, the stop token, or a full cache.
std::vector<int32_t> generate(Gpt2Decoder& decoder, std::span<const int32_t> prompt, const SampleOptions& opts,
                              Rng& rng, const std::function<void(int32_t)>& on_token = {});

// The same without a KV cache: the whole sequence through Gpt2::forward for every token.
// It re-plans the model's activations for each length.
std::vector<int32_t> generate_without_cache(Gpt2& model, std::span<const int32_t> prompt, const SampleOptions& opts,
                                            Rng& rng);

}  // namespace lmforge
