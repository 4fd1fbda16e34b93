// Llama (https://arxiv.org/abs/2302.13971, with Llama 2's grouped-query attention and Llama 3's
// rotary scaling): pre-norm blocks of RMSNorm → attention with rotary positions → RMSNorm →
// SwiGLU MLP, no biases, and the heads of every causal model (causal_lm.h). Forward and
// backward are written out as calls to the kernels, like GPT-2's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/gemm.h"
#include "core/aligned_buffer.h"
#include "core/arena.h"
#include "model/causal_lm.h"
#include "model/llama_acts.h"
#include "model/llama_config.h"
#include "model/llama_params.h"

namespace lmforge {

class Llama : public CausalLm {
public:
    // Validates cfg (InputError). Parameters start at zero; call init_weights or load them.
    Llama(const LlamaConfig& cfg, backend::Gemm& gemm, Precision precision = Precision::Fp32,
          Recompute recompute = Recompute::None);

    const LlamaConfig& config() const { return cfg_; }
    std::string config_json() const override { return cfg_.to_json(); }
    void init_weights(uint64_t seed) override;
    const LlamaParams& weights() const { return p_; }
    int64_t context_length() const override { return cfg_.block_size; }
    std::unique_ptr<Decoder> decoder(backend::Gemm& gemm) const override;
    // The rotary frequencies (HS/2), in fp32 as transformers computes them.
    const float* inv_freq() const { return inv_freq_.data(); }

private:
    HeadIo head_io() const override;
    void plan_body(int64_t B, int64_t T) override;
    size_t body_bytes() const override { return arena_.capacity(); }
    void head_matrix_untouched() override;
    void forward_body(const int32_t* inputs) override;
    // Gradient ranges become ready as the final norm's and head's, then each block's from the
    // last to the first, then the embedding's.
    void backward_body(kernels::WeightGrad mode) override;

    // out (N, OC) = inp (N, C) · wᵀ, w (OC, C), in the model's precision.
    void linear(float* out, const float* inp, const uint16_t* inp_h, const float* w, int64_t N, int64_t C,
                int64_t OC);
    // The same backward from an fp32 gradient (rounded to bf16 in mixed precision) or, with
    // dout null, from the bf16 gradient already in acts_.dout_h.
    void linear_backward(float* dinp, float* dw, const float* dout, const float* inp, const uint16_t* inp_h,
                         const float* w, int64_t N, int64_t C, int64_t OC, kernels::WeightGrad mode);
    // o = rmsnorm(a) (b null), or res = a + b, then o = rmsnorm(res), into out or out_h.
    void norm(float* out, uint16_t* out_h, float* rstd, const float* weight, float* res, const float* a,
              const float* b);
    // Block l: attention branch and its residual add with the post-attention norm (→ res2,
    // ln2), then the MLP up to its projection (into acts_.proj).
    void attention_branch(int64_t l, const float* residual);
    void mlp_branch(int64_t l);
    void swiglu_layer(int64_t l);
    void recompute_block(int64_t l, const float* residual);
    void mlp_backward(int64_t l, kernels::WeightGrad mode);
    void attention_backward_layer(int64_t l, const float* residual, kernels::WeightGrad mode);

    LlamaConfig cfg_;
    Recompute recompute_;
    LlamaParams p_, g_;
    Arena arena_;
    LlamaActs acts_;
    AlignedBuffer<float> inv_freq_;     // (HS/2)
    std::vector<int64_t> block_begin_;  // offset of each block's first tensor; then the final norm's
};

}  // namespace lmforge
