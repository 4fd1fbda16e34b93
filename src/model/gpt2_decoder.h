// Generation with a KV cache: tokens go in one at a time and each layer keeps the keys and
// values of every position so far, so a new token costs attention over the cache, O(T),
// rather than a forward pass over the whole sequence. Batch of one sequence.
#pragma once

#include <cstdint>

#include "backend/gemm.h"
#include "core/aligned_buffer.h"
#include "model/gpt2.h"

namespace lmforge {

class Gpt2Decoder {
public:
    // Reads the model's weights (they must outlive the decoder); caches hold block_size positions.
    Gpt2Decoder(const Gpt2& model, backend::Gemm& gemm);

    void reset() { position_ = 0; }
    int64_t position() const { return position_; }
    int64_t capacity() const { return model_.config().block_size; }
    int64_t vocab_size() const { return model_.config().vocab_size; }

    // Feeds `token` at the next position; returns the logits for the token after it: (Vp),
    // the first vocab_size meaningful. InputError when the cache is full or the id is bad.
    const float* step(int32_t token);

private:
    const Gpt2& model_;
    backend::Gemm& gemm_;
    int64_t position_ = 0;
    AlignedBuffer<float> x_, ln_, qkv_, att_, proj_, fc_, fc_gelu_, logits_;
    AlignedBuffer<float> mean_, rstd_;  // layernorm's saved statistics (unused here)
    AlignedBuffer<float> kcache_, vcache_, scratch_;  // (L, block_size, C) twice; (NH, block_size)
};

}  // namespace lmforge
