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
    size_t activation_bytes() const override { return arena_.capacity(); }
    // Whether training's LM head takes its one pass here (kernels::lm_head_one_pass).
    bool head_one_pass() const { return kernels::lm_head_one_pass(gemm_, precision_ == Precision::Bf16); }

    // forward_backward and forward (model.h) take batches of up to block_size tokens per row,
    // ids in [0, vocab_size). The LM head (no num_labels) predicts targets, which may be
    // kIgnoreIndex (-100): only the counted rows reach the head. The classification head pools
    // each sequence's last real token (position lengths[b] - 1, after ln_f), as Hugging Face's
    // GPT2ForSequenceClassification. InputError for an id or label out of range.
    LossSum forward_backward(const Batch& batch, float grad_scale, bool accumulate) override;
    LossSum forward(const Batch& batch) override;
    const float* class_logits() const override { return acts_.class_logits; }  // (B, num_labels)

    // (B·T) per-position losses of the last pass with targets: 0 where ignored.
    const float* token_losses() const { return acts_.losses; }
    // Whether position i's target has the highest logit in the last pass with targets
    // (greedy decoding would produce it).
    bool target_is_top(int64_t i) const { return acts_.target_logit[i] >= acts_.row_max[i]; }

    // (B, T, Vp) from the last forward without targets (with targets, the loss is computed
    // in vocabulary chunks and the full logits never exist).
    const float* logits() const { return logits_.data(); }

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
    // Gradient ranges become ready (set_grads_ready_hook) as ln_f's, then each block's from the
    // last to the first, then the embeddings'.
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
    // Plans for the batch, checks its ids and lengths, and runs the body.
    void forward_start(const Batch& batch);
    // The rows with a target, gathered where some are ignored; returns how many.
    int64_t gather_head_rows(const int32_t* targets);
    // Where the head reads its rows: gathered, or all of ln_f's output.
    struct HeadRows {
        const float* x;
        const uint16_t* x_h;
        const int32_t* targets;
        float *losses, *target_logit, *row_max, *dx;
    };
    HeadRows head_rows(const int32_t* targets) const;
    // The LM head's losses over the counted rows, and with grad_scale also its gradients in
    // the same pass (d(ln_f output) into acts_.dln); then back to positions.
    LossSum lm_head(const int32_t* targets, const float* grad_scale, kernels::WeightGrad mode,
                    const kernels::SoftTargets* soft = nullptr);
    LossSum sum_head_losses(const HeadRows& rows, int64_t M) const;
    // The LM head's d(input) of the gathered rows (head_dx) back to positions in acts_.dln.
    void scatter_head_dx(int64_t M);
    // The classification head on each sequence's last real token; its backward into acts_.dln.
    LossSum classify_head(const int32_t* lengths, const int32_t* labels);
    void classify_head_backward(const int32_t* labels, float dloss, kernels::WeightGrad mode);
    void check_tokens(const int32_t* ids, bool allow_ignore, const char* what) const;

    Gpt2Config cfg_;
    backend::Gemm& gemm_;
    Recompute recompute_;
    AlignedBuffer<float> logits_;       // (B, T, Vp) of a forward without targets
    Gpt2Params p_, g_;  // views of params_ and grads_
    Arena arena_;
    Gpt2Acts acts_;
    int64_t B_ = 0, T_ = 0;
    const int32_t* inputs_ = nullptr;   // of the pass under way, for its backward
    std::vector<int64_t> pooled_rows_;  // (B) rows of (B·T) the classification head pooled
    bool head_gathered_ = false;  // the LM head runs on the gathered rows alone
    std::vector<int64_t> block_begin_;  // offset of each block's first tensor; then ln_f's
};

}  // namespace lmforge
