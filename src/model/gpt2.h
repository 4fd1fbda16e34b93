// GPT-2 (https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf):
// parameters and gradients in flat buffers, activations planned for one (B, T), and the
// forward and backward passes as calls to the kernels. No autograd: backward is written out.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "backend/gemm.h"
#include "core/aligned_buffer.h"
#include "core/arena.h"
#include "core/profiler.h"
#include "kernels/lm_head_loss.h"
#include "model/gpt2_acts.h"
#include "model/gpt2_config.h"
#include "model/gpt2_params.h"
#include "model/param_layout.h"
#include "kernels/matmul.h"
#include "model/precision.h"

namespace lmforge {

class Gpt2 {
public:
    // Validates cfg (InputError). Parameters start at zero; call init_weights or load them.
    // Mixed precision (Bf16) runs the GEMMs on bfloat16 copies of weights and activations;
    // recompute trades backward compute for activation memory (gpt2_acts.h).
    Gpt2(const Gpt2Config& cfg, backend::Gemm& gemm, Precision precision = Precision::Fp32,
         Recompute recompute = Recompute::None);

    const Gpt2Config& config() const { return cfg_; }
    const ParamLayout& layout() const { return layout_; }
    std::span<float> params() { return params_.span(); }
    std::span<const float> params() const { return params_.span(); }
    std::span<float> grads() { return grads_.span(); }
    std::span<const float> grads() const { return grads_.span(); }

    void init_weights(uint64_t seed);
    const Gpt2Params& weights() const { return p_; }  // typed views of params()
    Precision precision() const { return precision_; }
    Recompute recompute() const { return recompute_; }

    // Mixed precision keeps a bfloat16 copy of the parameters for the GEMMs. After writing
    // params() directly (loading, broadcasting), call weights_changed(): the next forward
    // refreshes the copy. An optimizer may instead refresh it as it updates, writing through
    // half_weights() (null in fp32).
    void weights_changed() { half_stale_ = true; }
    uint16_t* half_weights() { return params_h_.size() > 0 ? params_h_.data() : nullptr; }

    // Sizes activations for batches of B sequences of T tokens (T <= block_size).
    void plan(int64_t B, int64_t T);
    int64_t batch() const { return B_; }
    int64_t seq_len() const { return T_; }
    size_t activation_bytes() const { return arena_.capacity(); }

    // inputs, targets: (B, T). Token ids must lie in [0, vocab_size); targets may also be
    // kIgnoreIndex (-100), or targets null for logits only. Returns the mean loss over counted
    // targets (0 when there are none). Throws InputError for an id out of range.
    float forward(const int32_t* inputs, const int32_t* targets);
    // Sequence classification (config num_labels > 0): the hidden state after ln_f at
    // position last[b] of each sequence b (its last non-padding token, as Hugging Face's
    // GPT2ForSequenceClassification) through the score head; labels (B) in [0, num_labels),
    // or null for logits only. Returns the mean cross-entropy. backward() then follows it.
    float forward_classify(const int32_t* inputs, const int32_t* last, const int32_t* labels);
    const float* class_logits() const { return acts_.class_logits; }  // (B, num_labels)

    // (B·T) per-position losses of the last forward with targets: 0 where ignored.
    const float* token_losses() const { return acts_.losses; }

    // (B, T, Vp) from the last forward without targets (with targets, the loss is computed
    // in vocabulary chunks and the full logits never exist).
    const float* logits() const { return logits_.data(); }

    // grads += d(loss_scale · loss)/dθ for the last forward (which needs targets).
    void backward(float loss_scale = 1.0f);
    // Makes the next backward start the gradients from zero. It costs nothing now: that
    // backward overwrites the weight gradients where it would add to them (the bulk of the
    // buffer) and zeroes only the small rest, so the buffer is never swept twice.
    void zero_grad() { grads_stale_ = true; }

    // Times every kernel call into `profiler` (null: no timing).
    void set_profiler(Profiler* profiler) { profiler_ = profiler; }

    // Called by backward as ranges [begin, end) of the flat gradient buffer become final:
    // ln_f's first, then each block from the last to the first, then the embeddings — from
    // the end of the buffer to its start. Empty: no calls. (For overlapping communication.)
    void set_grads_ready_hook(std::function<void(int64_t begin, int64_t end)> hook) { ready_hook_ = std::move(hook); }

private:
    // out (N, OC) = inp (N, C) · w + b in the model's precision: inp in fp32, or inp_h in
    // bf16 (written by the kernel that produced it).
    void linear_forward(float* out, const float* inp, const uint16_t* inp_h, const float* w, const float* b,
                        int64_t N, int64_t C, int64_t OC);
    // Where a layernorm writes: out in fp32 or out_h in bf16 (by precision), and its stats.
    struct LayerNormOut {
        float* out;
        uint16_t* out_h;
        float *mean, *rstd;
        const float *weight, *bias;
    };
    LayerNormOut lnf_out() const;
    // o = layernorm(a), or with b: res = a + b, then o = layernorm(res), in one pass.
    void norm(const LayerNormOut& o, float* res, const float* a, const float* b, int64_t N);
    // Embeddings, blocks and ln_f (into acts_.lnf or lnf_h); backward from acts_.dln down.
    void forward_body(const int32_t* inputs);
    void backward_body(kernels::WeightGrad mode);
    // Block l's forward in three steps: attention branch and residual (→ res2, ln2), then
    // c_fc and GELU, then the MLP's projection (into acts_.proj, for the fused residual add).
    void attention_branch(int64_t l, const float* residual);
    void mlp_hidden(int64_t l);
    void mlp_projection(int64_t l);
    LayerNormOut ln1_out(int64_t l) const;
    // Before block l's backward, in recompute mode: what it did not keep, from its input.
    void recompute_block(int64_t l, const float* residual);
    void linear_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                         const uint16_t* inp_h, const float* w, int64_t N, int64_t C, int64_t OC,
                         kernels::WeightGrad mode);
    kernels::LmHeadLossShape lm_head_shape() const;
    const uint16_t* half(const float* param) const { return params_h_.data() + (param - params_.data()); }
    void lap(const char* name) {
        if (profiler_ != nullptr) profiler_->lap(name);
    }
    void check_tokens(const int32_t* ids, bool allow_ignore, const char* what) const;

    Gpt2Config cfg_;
    backend::Gemm& gemm_;
    ParamLayout layout_;
    Precision precision_;
    Recompute recompute_;
    AlignedBuffer<float> params_, grads_;
    AlignedBuffer<uint16_t> params_h_;  // mixed precision: bfloat16 copy of params_
    AlignedBuffer<float> logits_;       // (B, T, Vp) of a forward without targets
    bool half_stale_ = true;
    Gpt2Params p_, g_;  // views of params_ and grads_
    Arena arena_;
    Gpt2Acts acts_;
    int64_t B_ = 0, T_ = 0;
    const int32_t* inputs_ = nullptr;   // of the last forward, for backward
    const int32_t* targets_ = nullptr;
    const int32_t* labels_ = nullptr;    // of the last forward_classify
    std::vector<int64_t> pooled_rows_;  // (B) rows of (B·T) that forward_classify pooled
    int64_t counted_ = 0;  // targets that are not ignored, in the last forward
    bool grads_stale_ = true;  // the next backward overwrites instead of adding
    // Gradients backward only ever adds to (biases, LayerNorm, wpe): zeroed when stale.
    std::vector<std::span<float>> accumulated_grads_;
    Profiler* profiler_ = nullptr;
    std::function<void(int64_t, int64_t)> ready_hook_;
    std::vector<int64_t> block_begin_;  // offset of each block's first tensor; then ln_f's
};

}  // namespace lmforge
