// Llama (https://arxiv.org/abs/2302.13971, with Llama 2's grouped-query attention and Llama 3's
// rotary scaling): pre-norm blocks of RMSNorm → attention with rotary positions → RMSNorm →
// SwiGLU MLP, no biases, and the heads of every causal model (causal_lm.h). Forward and
// backward are written out as calls to the kernels, like GPT-2's.
//
// With LoRA (lora.h) the model's parameters (Model::params(): what AdamW, the all-reduce and
// checkpoints see) are the adapters alone, and a classifier's head; the base weights are a
// frozen store in the compute precision — bfloat16 in mixed precision, with no fp32 copy, no
// gradient and no moments — filled by load_base.
#pragma once

#include <array>
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
#include "model/lora.h"

namespace lmforge {

class Llama : public CausalLm {
public:
    // Validates cfg (InputError). Parameters start at zero; call init_weights or load them
    // (and with LoRA, load_base).
    Llama(const LlamaConfig& cfg, backend::Gemm& gemm, Precision precision = Precision::Fp32,
          Recompute recompute = Recompute::None, const LoraOptions& lora = {});

    const LlamaConfig& config() const { return cfg_; }
    const LoraOptions& lora() const { return lora_; }
    std::string config_json() const override;
    // LoRA: A uniform in ±1/√in and B zero (PEFT's start: the model begins as its base), a
    // classifier's head normal(0, 0.02). Otherwise every weight as transformers initialises it.
    void init_weights(uint64_t seed) override;
    bool adapters_only() const override { return lora_.enabled(); }
    int64_t context_length() const override { return cfg_.block_size; }
    // A decoder over this model's weights; with LoRA, over a merged copy it owns.
    std::unique_ptr<Decoder> decoder(backend::Gemm& gemm) const override;
    // The rotary frequencies (HS/2), in fp32 as transformers computes them.
    const float* inv_freq() const { return inv_freq_.data(); }
    // The fp32 weights (views into params(); with LoRA, null: see merged()).
    const LlamaParams& weights() const { return p_; }

    // LoRA: the frozen base from a checkpoint's model.safetensors of this shape (F32, F16 or
    // BF16, rounded to the store's precision). InputError naming the file and tensor.
    void load_base(const std::string& path);
    // LoRA: the model with every adapter folded into its weight (W + scaling·B·A), in fp32 and
    // without adapters: what sampling and the merged export use.
    std::unique_ptr<Llama> merged(backend::Gemm& gemm) const;
    // LoRA: a random base (as init_weights draws a whole model), for benchmarks without a checkpoint.
    void init_base(uint64_t seed);
    size_t frozen_bytes() const override {
        return frozen32_.size() * sizeof(float) + frozen16_.size() * sizeof(uint16_t) + norms32_.size() * sizeof(float);
    }
    // LoRA: the frozen base's tensors (empty without LoRA).
    const ParamLayout& frozen_layout() const { return frozen_layout_; }

private:
    HeadIo head_io() const override;
    HeadGrads head_grads() override;
    void open_head_grads() override;
    int64_t grad_window() const override;
    // Where the gradients of layer l, the final norm and the embedding are written: grad_of
    // each trainable tensor (null where LoRA freezes it).
    LlamaLayerWeights<float*> layer_grads(int64_t l);
    float* norm_grad();
    kernels::GradOut embed_grad();
    // Whether backward only adds to the embedding's gradient (no tied LM head writes it first).
    bool embed_only_added() const { return !(cfg_.tie_embeddings && cfg_.num_labels == 0); }
    void plan_body(int64_t B, int64_t T) override;
    size_t body_bytes() const override { return arena_.capacity(); }
    void head_matrix_untouched() override;
    bool head_frozen() const override { return lora_.enabled() && cfg_.num_labels == 0; }
    void forward_body(const int32_t* inputs) override;
    // Gradient ranges become ready as the final norm's and head's, then each block's from the
    // last to the first, then the embedding's (with LoRA, all at the end: adapters are small).
    void backward_body(kernels::WeightGrad mode) override;

    void bind_frozen();
    void bind_adapters();
    // merged()'s two steps: the frozen base (and a classifier's head) into m's fp32 weights,
    // then each adapter's scaling·B·A added to its weight.
    void copy_frozen_into(Llama& m) const;
    void fold_adapters_into(Llama& m, backend::Gemm& gemm) const;
    // out (N, OC) = inp (N, C) · wᵀ, w (OC, C) in fp32 (w) or bf16 (w_h), in the model's precision.
    void linear(float* out, const float* inp, const uint16_t* inp_h, const float* w, const uint16_t* w_h, int64_t N,
                int64_t C, int64_t OC);
    // The same backward from an fp32 gradient (rounded to bf16 in mixed precision) or, with
    // dout null, from the bf16 gradient already in acts_.dout_h. dw null: frozen. add_to_dinp:
    // onto the adapters' share of dinp (a frozen weight only).
    void linear_backward(float* dinp, float* dw, const float* dout, const float* inp, const uint16_t* inp_h,
                         const float* w, const uint16_t* w_h, int64_t N, int64_t C, int64_t OC,
                         kernels::WeightGrad mode, bool add_to_dinp = false);
    // An RMSNorm's backward into acts_.dres (from acts_.dln). Where a projection onto the
    // residual stream comes below it (projection_below), in mixed precision, the same pass
    // writes dres's bf16 copy into acts_.dout_h for that projection's backward.
    void norm_backward(float* dweight, const float* inp, const float* weight, const float* rstd,
                       bool projection_below);
    // The fp32 gradient a projection's backward reads: dout, or null in mixed precision, where
    // its bf16 copy is already in acts_.dout_h.
    const float* fp32_dout(const float* dout) const;
    // That of a projection onto the residual stream: acts_.dres's (in bf16 by norm_backward).
    const float* residual_dout() const;
    // o = rmsnorm(a) (b null), or res = a + b, then o = rmsnorm(res), into out or out_h.
    void norm(float* out, uint16_t* out_h, float* rstd, const float* weight, float* res, const float* a,
              const float* b);
    // Block l: attention branch and its residual add with the post-attention norm (→ res2,
    // ln2), then the MLP up to its projection (into acts_.proj).
    void attention_branch(int64_t l, const float* residual);
    void mlp_up(int64_t l);
    void mlp_branch(int64_t l);
    // SwiGLU of block l's gate_up: from_gemm, right after mlp_up (whose fp32 output, in mixed
    // precision, it rounds into the bf16 copy kept), or from that copy (gelu recompute).
    void swiglu_layer(int64_t l, bool from_gemm);
    void recompute_block(int64_t l, const float* residual);
    void mlp_backward(int64_t l, kernels::WeightGrad mode);
    void attention_backward_layer(int64_t l, const float* residual, kernels::WeightGrad mode);
    // The adapters of layer l on targets [first, last] (none without LoRA), on y from x.
    LoraPass lora_pass() const;
    LoraGroup adapter_group(int64_t l, LoraTarget first, LoraTarget last) const;
    void adapters_forward(int64_t l, LoraTarget first, LoraTarget last, float* y, const float* x, const uint16_t* x_h);
    // Their backward, writing dx (null: not wanted); whether there were any.
    bool adapters_backward(int64_t l, LoraTarget first, LoraTarget last, float* dx, const float* dy,
                           const uint16_t* dy_h, const float* x, const uint16_t* x_h);

    LlamaConfig cfg_;
    Recompute recompute_;
    LoraOptions lora_;
    LlamaParams p_;       // fp32 weights (null where frozen in bf16, or absent)
    LlamaParams g_;       // LoRA: the classifier's gradient (the rest is frozen: null)
    LlamaHalfParams ph_;  // bf16 weights in mixed precision
    // LoRA's frozen base: the body and LM head in fp32, or in bf16 with the norms' gains in fp32.
    ParamLayout frozen_layout_, norms_layout_;
    AlignedBuffer<float> frozen32_, norms32_;
    AlignedBuffer<uint16_t> frozen16_;
    std::vector<std::array<LoraAdapter, kLoraTargets>> adapters_;  // per layer
    Arena arena_;
    LlamaActs acts_;
    AlignedBuffer<float> inv_freq_;     // (HS/2)
    std::vector<int64_t> block_begin_;  // offset of each block's first tensor; then the final norm's
};

}  // namespace lmforge
