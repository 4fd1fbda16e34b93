// GPT-2 (https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf):
// parameters and gradients in flat buffers, activations planned for one (B, T), and the
// forward and backward passes as calls to the kernels. No autograd: backward is written out.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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
#include "model/causal_lm.h"
#include "model/precision.h"

namespace lmforge {

class Gpt2 : public CausalLm {
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
    int64_t context_length() const override { return cfg_.block_size; }
    std::unique_ptr<Decoder> decoder(backend::Gemm& gemm) const override;

private:
    HeadIo head_io() const override;
    HeadGrads head_grads() override;
    void open_head_grads() override;
    int64_t grad_window() const override;
    // Where block l's gradients are written (grad_of each of its tensors).
    Gpt2LayerParams layer_grads(int64_t l);
    void plan_body(int64_t B, int64_t T) override;
    size_t body_bytes() const override { return arena_.capacity(); }
    void head_matrix_untouched() override;
    // out (N, OC) = inp (N, C) · w + b in the model's precision: inp in fp32, or inp_h in
    // bf16 (written by the kernel that produced it).
    void linear_forward(float* out, const float* inp, const uint16_t* inp_h, const float* w, const float* b,
                        int64_t N, int64_t C, int64_t OC);
    // The same for an output kept for backward: out in fp32, or out_h in bf16.
    void linear_forward(float* out, uint16_t* out_h, const float* inp, const uint16_t* inp_h, const float* w,
                        const float* b, int64_t N, int64_t C, int64_t OC);
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
    void forward_body(const int32_t* inputs) override;
    // Gradient ranges become ready (set_grads_ready_hook) as ln_f's, then each block's from the
    // last to the first, then the embeddings'.
    void backward_body(kernels::WeightGrad mode) override;
    // Block l's forward in three steps: attention branch and residual (→ res2, ln2), then
    // c_fc and GELU, then the MLP's projection (into acts_.proj, for the fused residual add).
    void attention_branch(int64_t l, const float* residual);
    void mlp_hidden(int64_t l);
    void mlp_projection(int64_t l);
    LayerNormOut ln1_out(int64_t l) const;
    LayerNormOut ln2_out(int64_t l) const;
    // GELU of block l's c_fc output into the GEMM input of its precision (fch_gelu or _h).
    void gelu_forward_layer(int64_t l);
    // Block l's backward, in forward's steps reversed, from acts_.dres down to it: the MLP
    // branch (→ dres through ln_2), then the attention branch (→ dres through ln_1). dw: where
    // its gradients go (layer_grads); residual: the block's input (res3 of block l − 1, or the
    // embeddings).
    void mlp_backward(int64_t l, const Gpt2LayerParams& dw, kernels::WeightGrad mode);
    void attention_branch_backward(int64_t l, const float* residual, const Gpt2LayerParams& dw,
                                   kernels::WeightGrad mode);
    // Before block l's backward, in recompute mode: what it did not keep, from its input.
    void recompute_block(int64_t l, const float* residual);
    void linear_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                         const uint16_t* inp_h, const float* w, int64_t N, int64_t C, int64_t OC,
                         kernels::WeightGrad mode);
    // A layernorm's backward into acts_.dres (from acts_.dln). Where a projection onto the
    // residual stream comes below it (projection_below), in mixed precision, the same pass
    // makes what that projection's backward reads: dres's bf16 copy and its column sums.
    void norm_backward(float* dweight, float* dbias, const float* inp, const LayerNormOut& o,
                       bool projection_below);
    // A projection onto the residual stream (c_proj; C_in inputs): its output gradient is
    // acts_.dres, in bf16 as norm_backward left it.
    void projection_backward(float* dinp, float* dw, float* db, const float* inp, const uint16_t* inp_h,
                             const float* w, int64_t C_in, kernels::WeightGrad mode);

    Gpt2Config cfg_;
    Recompute recompute_;
    Gpt2Params p_;  // views of params_
    Arena arena_;
    Gpt2Acts acts_;
    std::vector<int64_t> block_begin_;  // offset of each block's first tensor; then ln_f's
};

}  // namespace lmforge
