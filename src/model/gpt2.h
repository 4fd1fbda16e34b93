// GPT-2 (https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf):
// parameters and gradients in flat buffers, activations planned for one (B, T), and the
// forward and backward passes as calls to the kernels. No autograd: backward is written out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
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
#include "model/model.h"
#include "model/precision.h"

namespace lmforge {

class Gpt2 : public Model {
public:
    // Validates cfg (InputError). Parameters start at zero; call init_weights or load them.
    // Mixed precision (Bf16) runs the GEMMs on bfloat16 copies of weights and activations;
    // recompute trades backward compute for activation memory (gpt2_acts.h).
    Gpt2(const Gpt2Config& cfg, backend::Gemm& gemm, Precision precision = Precision::Fp32,
         Recompute recompute = Recompute::None);

    const Gpt2Config& config() const { return cfg_; }
    std::string config_json() const override { return cfg_.to_json(); }
    void init_weights(uint64_t seed) override;
    const Gpt2Params& weights() const { return p_; }  // typed views of params()
    Recompute recompute() const { return recompute_; }
    int64_t vocab_size() const override { return cfg_.vocab_size; }
    int64_t num_labels() const override { return cfg_.num_labels; }

    // Sizes activations for batches of B sequences of T tokens (T <= block_size).
    void plan(int64_t B, int64_t T) override;
    int64_t batch() const { return B_; }
    int64_t seq_len() const { return T_; }
    size_t activation_bytes() const { return arena_.capacity(); }
    // Whether training's LM head takes its one pass here (kernels::lm_head_one_pass).
    bool head_one_pass() const { return kernels::lm_head_one_pass(gemm_, precision_ == Precision::Bf16); }

    // inputs, targets: (B, T). Token ids must lie in [0, vocab_size); targets may also be
    // kIgnoreIndex (-100), or targets null for logits only. Returns the mean loss over counted
    // targets (0 when there are none). Throws InputError for an id out of range.
    float forward(const int32_t* inputs, const int32_t* targets);
    // Sequence classification (config num_labels > 0): the hidden state after ln_f at each
    // sequence's last real token (position lengths[b] - 1, as Hugging Face's
    // GPT2ForSequenceClassification) through the score head.
    float forward_classify(const int32_t* inputs, const int32_t* lengths, const int32_t* labels) override;
    const float* class_logits() const override { return acts_.class_logits; }  // (B, num_labels)

    // (B·T) per-position losses of the last forward with targets: 0 where ignored.
    const float* token_losses() const { return acts_.losses; }
    // Whether position i's target has the highest logit in the last forward with targets
    // (greedy decoding would produce it).
    bool target_is_top(int64_t i) const { return acts_.target_logit[i] >= acts_.row_max[i]; }

    // (B, T, Vp) from the last forward without targets (with targets, the loss is computed
    // in vocabulary chunks and the full logits never exist).
    const float* logits() const { return logits_.data(); }

    // grads += d(loss_scale · loss)/dθ for the last forward (which needs targets). Gradient
    // ranges become ready (set_grads_ready_hook) as ln_f's, then each block's from the last to
    // the first, then the embeddings'.
    void backward(float loss_scale = 1.0f) override;

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
    LayerNormOut ln2_out(int64_t l) const;
    // GELU of block l's c_fc output into the GEMM input of its precision (fch_gelu or _h).
    void gelu_forward_layer(int64_t l);
    // Before block l's backward, in recompute mode: what it did not keep, from its input.
    void recompute_block(int64_t l, const float* residual);
    void linear_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                         const uint16_t* inp_h, const float* w, int64_t N, int64_t C, int64_t OC,
                         kernels::WeightGrad mode);
    kernels::LmHeadLossShape lm_head_shape(int64_t rows) const;  // the head on `rows` rows
    // The LM head's d(input) of the gathered rows (head_dx) back to positions in acts_.dln.
    void scatter_head_dx();
    // The loss and the LM head's gradients in one pass (the forward after expect_backward).
    void lm_head_loss_train_pass(float loss_scale, const float* x, const uint16_t* x_h, const int32_t* targets,
                                 float* losses, float* target_logit, float* row_max);
    void check_tokens(const int32_t* ids, bool allow_ignore, const char* what) const;

    Gpt2Config cfg_;
    backend::Gemm& gemm_;
    Recompute recompute_;
    AlignedBuffer<float> logits_;       // (B, T, Vp) of a forward without targets
    Gpt2Params p_, g_;  // views of params_ and grads_
    Arena arena_;
    Gpt2Acts acts_;
    int64_t B_ = 0, T_ = 0;
    const int32_t* inputs_ = nullptr;   // of the last forward, for backward
    const int32_t* targets_ = nullptr;
    const int32_t* labels_ = nullptr;    // of the last forward_classify
    std::vector<int64_t> pooled_rows_;  // (B) rows of (B·T) that forward_classify pooled
    int64_t counted_ = 0;  // targets that are not ignored, in the last forward
    bool head_gathered_ = false;  // the last forward's LM head ran on the gathered rows alone
    // Set when the last forward (after expect_backward) computed the LM head's gradients:
    // the loss scale it used, and whether the weight gradients were overwritten or added to.
    std::optional<float> head_grads_scale_;
    kernels::WeightGrad head_grads_mode_ = kernels::WeightGrad::Overwrite;
    std::vector<int64_t> block_begin_;  // offset of each block's first tensor; then ln_f's
};

}  // namespace lmforge
