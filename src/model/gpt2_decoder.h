// GPT-2's KV-cache decoder (causal_lm.h's Decoder): one position at a time through the blocks,
// each layer's keys and values kept for block_size positions.
#pragma once

#include <cstdint>

#include "backend/gemm.h"
#include "core/aligned_buffer.h"
#include "model/gpt2.h"

namespace lmforge {

class Gpt2Decoder : public Decoder {
public:
    // Reads the model's weights (they must outlive the decoder); caches hold block_size positions.
    Gpt2Decoder(const Gpt2& model, backend::Gemm& gemm);

    void reset() override { position_ = 0; }
    int64_t position() const override { return position_; }
    int64_t capacity() const override { return model_.config().block_size; }
    int64_t vocab_size() const override { return model_.config().vocab_size; }
    const float* step(int32_t token) override;  // (Vp) logits

private:
    const Gpt2& model_;
    backend::Gemm& gemm_;
    int64_t position_ = 0;
    AlignedBuffer<float> x_, ln_, qkv_, att_, proj_, fc_, fc_gelu_, logits_;
    AlignedBuffer<float> mean_, rstd_;  // layernorm's saved statistics (unused here)
    AlignedBuffer<float> kcache_, vcache_, scratch_;  // (L, block_size, C) twice; (NH, block_size)
};

}  // namespace lmforge
