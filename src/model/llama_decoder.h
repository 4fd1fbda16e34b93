// Llama's KV-cache decoder (causal_lm.h's Decoder): one position at a time through the blocks,
// each layer's rotated keys and values kept. A long-context model's cache would not fit in
// memory at its full context (Llama 3.2's 131072 positions: 8.6 GB for 1B), so it holds at most
// kMaxCachePositions; generation past it slides its window (train/sampler.h).
#pragma once

#include <cstdint>
#include <memory>

#include "backend/gemm.h"
#include "core/aligned_buffer.h"
#include "model/llama.h"

namespace lmforge {

class LlamaDecoder : public Decoder {
public:
    static constexpr int64_t kMaxCachePositions = 4096;

    // Reads the model's weights (they must outlive the decoder).
    LlamaDecoder(const Llama& model, backend::Gemm& gemm);
    // Owns the model it reads (a LoRA model's merged copy).
    LlamaDecoder(std::unique_ptr<Llama> owned, backend::Gemm& gemm);

    void reset() override { position_ = 0; }
    int64_t position() const override { return position_; }
    int64_t capacity() const override { return capacity_; }
    int64_t vocab_size() const override { return model_.config().vocab_size; }
    const float* step(int32_t token) override;  // (Vp) logits

private:
    // Block l on x at the current position: attention over the cache, then the MLP.
    void block(int64_t l, float* x);

    std::unique_ptr<Llama> owned_;
    const Llama& model_;
    backend::Gemm& gemm_;
    int64_t capacity_, position_ = 0;
    AlignedBuffer<float> x_, ln_, qkv_, att_, proj_, gate_up_, act_, logits_, rstd_, cos_, sin_;
    AlignedBuffer<float> kcache_, vcache_, scratch_;  // (L, capacity, KVC) twice; (NH, capacity)
};

}  // namespace lmforge
