#include "model/llama.h"

#include <fmt/format.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/bf16.h"
#include "kernels/encoder.h"
#include "kernels/linear.h"
#include "kernels/matmul.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace lmforge {

using namespace kernels;

Llama::Llama(const LlamaConfig& cfg, backend::Gemm& gemm, Precision precision, Recompute recompute)
    : CausalLm(llama_param_layout(validated(cfg)), precision, gemm,
               {.C = cfg.n_embd, .V = cfg.vocab_size, .Vp = cfg.padded_vocab(), .L = cfg.num_labels}),
      cfg_(cfg),
      recompute_(recompute),
      inv_freq_(cfg.head_size() / 2) {
    p_ = bind_llama_params(cfg_, layout_, params_.data());
    g_ = bind_llama_params(cfg_, layout_, grads_.data());
    const int64_t C = cfg_.n_embd;
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        block_begin_.push_back(layout_.find(fmt::format("model.layers.{}.input_layernorm.weight", l)).offset);
        accumulated_grads_.emplace_back(g_.layers[l].input_norm, static_cast<size_t>(C));
        accumulated_grads_.emplace_back(g_.layers[l].post_norm, static_cast<size_t>(C));
    }
    block_begin_.push_back(layout_.find("model.norm.weight").offset);
    accumulated_grads_.emplace_back(g_.norm, static_cast<size_t>(C));
    // The embedding's gradient is only added to, unless the LM head (tied) writes it first.
    const bool head_writes_embed = cfg_.tie_embeddings && cfg_.num_labels == 0;
    if (!head_writes_embed) accumulated_grads_.emplace_back(g_.embed, static_cast<size_t>(cfg_.padded_vocab() * C));
    if (g_.score != nullptr) accumulated_grads_.emplace_back(g_.score, static_cast<size_t>(cfg_.num_labels * C));
    rope_inv_freq(inv_freq_.data(), cfg_.head_size(), cfg_.rope_theta,
                  cfg_.rope_scaling ? &*cfg_.rope_scaling : nullptr);
}

void Llama::init_weights(uint64_t seed) {
    Rng rng(seed);
    init_llama_params(layout_, params_.data(), rng);
    weights_changed();
}

void Llama::plan_body(int64_t B, int64_t T) {
    acts_ = plan_llama_acts(cfg_, B, T, precision_, recompute_, arena_);
    rope_tables(acts_.rope_cos, acts_.rope_sin, inv_freq_.data(), cfg_.head_size(), 0, T);
}

Llama::HeadIo Llama::head_io() const {
    const float* w = cfg_.tie_embeddings ? p_.embed : p_.lm_head;
    float* dw = cfg_.tie_embeddings ? g_.embed : g_.lm_head;
    return {acts_.lnf, acts_.lnf_h, acts_.dln, w, dw, p_.score, g_.score};
}

void Llama::head_matrix_untouched() {
    // A classifier has no LM head matrix (and the embedding's gradient is zeroed with the
    // accumulated ones); a language model's is the embedding (tied) or lm_head.
    if (cfg_.num_labels == 0) zero(head_io().dw, cfg_.padded_vocab() * cfg_.n_embd);
}

void Llama::linear(float* out, const float* inp, const uint16_t* inp_h, const float* w, int64_t N, int64_t C,
                   int64_t OC) {
    if (precision_ == Precision::Fp32) {
        linear_forward(gemm_, out, inp, w, nullptr, N, C, OC);
    } else {
        linear_forward_bf16(gemm_, out, inp_h, half(w), nullptr, N, C, OC);
    }
    lap("matmul_fwd");
}

void Llama::linear_backward(float* dinp, float* dw, const float* dout, const float* inp, const uint16_t* inp_h,
                            const float* w, int64_t N, int64_t C, int64_t OC, WeightGrad mode) {
    if (precision_ == Precision::Fp32) {
        kernels::linear_backward(gemm_, dinp, dw, nullptr, dout, inp, w, N, C, OC, mode);
    } else {
        if (dout != nullptr) to_bf16(acts_.dout_h, dout, N * OC);
        linear_backward_bf16(gemm_, dinp, dw, nullptr, nullptr, acts_.dout_h, inp_h, half(w), N, C, OC, mode);
    }
    lap("matmul_bwd");
}

void Llama::norm(float* out, uint16_t* out_h, float* rstd, const float* weight, float* res, const float* a,
                 const float* b) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    const auto eps = static_cast<float>(cfg_.rms_norm_eps);
    const bool half = precision_ == Precision::Bf16;
    if (b == nullptr && half) rmsnorm_forward(out_h, rstd, a, weight, N, C, eps);
    if (b == nullptr && !half) rmsnorm_forward(out, rstd, a, weight, N, C, eps);
    if (b != nullptr && half) residual_rmsnorm_forward(res, out_h, rstd, a, b, weight, N, C, eps);
    if (b != nullptr && !half) residual_rmsnorm_forward(res, out, rstd, a, b, weight, N, C, eps);
    lap("rmsnorm_fwd");
}

void Llama::attention_branch(int64_t l, const float* residual) {
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd, W = cfg_.qkv_width();
    const LlamaLayerParams& w = p_.layers[l];
    const LlamaLayerActs& a = acts_.layers[l];
    linear(a.qkv, a.ln1, a.ln1_h, w.qkv, N, C, W);
    // q's and k's heads are the first NH + NKV heads of each row.
    rope_forward(a.qkv, acts_.rope_cos, acts_.rope_sin, B, T, W, cfg_.n_head + cfg_.n_kv_head, cfg_.head_size());
    lap("rope_fwd");
    attention_forward(a.atty, a.att_lse, a.qkv, B, T, C, cfg_.n_head, cfg_.n_kv_head);
    if (precision_ == Precision::Bf16) to_bf16(a.atty_h, a.atty, N * C);
    lap("attention_fwd");
    linear(acts_.proj, a.atty, a.atty_h, w.o_proj, N, C, C);
    norm(a.ln2, a.ln2_h, a.ln2_rstd, w.post_norm, a.res2, residual, acts_.proj);
}

void Llama::swiglu_layer(int64_t l) {
    const LlamaLayerActs& a = acts_.layers[l];
    const int64_t N = B_ * T_, I = cfg_.intermediate;
    if (precision_ == Precision::Bf16) {
        swiglu_forward(a.act_h, a.gate_up, N, I);
    } else {
        swiglu_forward(a.act, a.gate_up, N, I);
    }
    lap("swiglu_fwd");
}

void Llama::mlp_branch(int64_t l) {
    const int64_t N = B_ * T_, C = cfg_.n_embd, I = cfg_.intermediate;
    const LlamaLayerParams& w = p_.layers[l];
    const LlamaLayerActs& a = acts_.layers[l];
    linear(a.gate_up, a.ln2, a.ln2_h, w.gate_up, N, C, 2 * I);
    swiglu_layer(l);
    linear(acts_.proj, a.act, a.act_h, w.down_proj, N, I, C);
}

void Llama::forward_body(const int32_t* inputs) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    token_embedding_forward(acts_.embedded, inputs, p_.embed, N, C);
    lap("embedding_fwd");
    // Each residual add is fused with the RMSNorm that reads its result: the next block's
    // input norm or, after the last block, the final norm.
    const auto next_norm = [&](int64_t l, float* res, const float* a, const float* b) {
        if (l < cfg_.n_layer) {
            const LlamaLayerActs& n = acts_.layers[l];
            norm(n.ln1, n.ln1_h, n.ln1_rstd, p_.layers[l].input_norm, res, a, b);
        } else {
            norm(acts_.lnf, acts_.lnf_h, acts_.lnf_rstd, p_.norm, res, a, b);
        }
    };
    next_norm(0, nullptr, acts_.embedded, nullptr);
    const float* residual = acts_.embedded;
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        const LlamaLayerActs& a = acts_.layers[l];
        attention_branch(l, residual);
        mlp_branch(l);
        next_norm(l + 1, a.res3, a.res2, acts_.proj);
        residual = a.res3;
    }
}

void Llama::recompute_block(int64_t l, const float* residual) {
    // The last block's activations are still in the shared buffers: nothing ran after it.
    if (recompute_ == Recompute::None || l == cfg_.n_layer - 1) return;
    const LlamaLayerActs& a = acts_.layers[l];
    const LlamaLayerParams& w = p_.layers[l];
    norm(a.ln1, a.ln1_h, a.ln1_rstd, w.input_norm, nullptr, residual, nullptr);  // as the fused pass computes it
    if (recompute_ == Recompute::Block) {
        attention_branch(l, residual);
        const int64_t N = B_ * T_, C = cfg_.n_embd, I = cfg_.intermediate;
        linear(a.gate_up, a.ln2, a.ln2_h, w.gate_up, N, C, 2 * I);
    } else {  // Gelu: the pointwise outputs only
        norm(a.ln2, a.ln2_h, a.ln2_rstd, w.post_norm, nullptr, a.res2, nullptr);
    }
    swiglu_layer(l);
    lap("recompute");
}

void Llama::mlp_backward(int64_t l, WeightGrad mode) {
    const int64_t N = B_ * T_, C = cfg_.n_embd, I = cfg_.intermediate;
    const LlamaLayerParams& w = p_.layers[l];
    const LlamaLayerParams& dw = g_.layers[l];
    const LlamaLayerActs& a = acts_.layers[l];
    linear_backward(acts_.dact, dw.down_proj, acts_.dres, a.act, a.act_h, w.down_proj, N, I, C, mode);
    if (precision_ == Precision::Fp32) {
        swiglu_backward(acts_.dgate_up, acts_.dact, a.gate_up, N, I);
        lap("swiglu_bwd");
        linear_backward(acts_.dln, dw.gate_up, acts_.dgate_up, a.ln2, a.ln2_h, w.gate_up, N, C, 2 * I, mode);
    } else {  // the GEMMs read the gradient in bf16: SwiGLU's backward writes it so at once
        swiglu_backward(acts_.dout_h, acts_.dact, a.gate_up, N, I);
        lap("swiglu_bwd");
        linear_backward(acts_.dln, dw.gate_up, nullptr, a.ln2, a.ln2_h, w.gate_up, N, C, 2 * I, mode);
    }
    rmsnorm_backward(acts_.dres, dw.post_norm, acts_.dln, a.res2, w.post_norm, a.ln2_rstd, N, C);
    lap("rmsnorm_bwd");
}

void Llama::attention_backward_layer(int64_t l, const float* residual, WeightGrad mode) {
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd, W = cfg_.qkv_width();
    const LlamaLayerParams& w = p_.layers[l];
    const LlamaLayerParams& dw = g_.layers[l];
    const LlamaLayerActs& a = acts_.layers[l];
    linear_backward(acts_.datty, dw.o_proj, acts_.dres, a.atty, a.atty_h, w.o_proj, N, C, C, mode);
    attention_backward(acts_.dqkv, acts_.datty, a.atty, a.att_lse, a.qkv, B, T, C, cfg_.n_head, cfg_.n_kv_head);
    lap("attention_bwd");
    rope_backward(acts_.dqkv, acts_.rope_cos, acts_.rope_sin, B, T, W, cfg_.n_head + cfg_.n_kv_head,
                  cfg_.head_size());
    lap("rope_bwd");
    linear_backward(acts_.dln, dw.qkv, acts_.dqkv, a.ln1, a.ln1_h, w.qkv, N, C, W, mode);
    rmsnorm_backward(acts_.dres, dw.input_norm, acts_.dln, residual, w.input_norm, a.ln1_rstd, N, C);
    lap("rmsnorm_bwd");
}

void Llama::backward_body(WeightGrad mode) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    const float* last = cfg_.n_layer > 0 ? acts_.layers.back().res3 : acts_.embedded;
    zero(acts_.dres, N * C);
    rmsnorm_backward(acts_.dres, g_.norm, acts_.dln, last, p_.norm, acts_.lnf_rstd, N, C);
    lap("rmsnorm_bwd");
    grads_ready(block_begin_.back(), layout_.total());
    // acts_.dres holds d(loss)/d(block output); each block adds its branches' gradients to it.
    for (int64_t l = cfg_.n_layer - 1; l >= 0; l--) {
        const float* residual = l > 0 ? acts_.layers[l - 1].res3 : acts_.embedded;
        recompute_block(l, residual);
        mlp_backward(l, mode);
        attention_backward_layer(l, residual, mode);
        grads_ready(block_begin_[l], block_begin_[l + 1]);
    }
    token_embedding_backward(g_.embed, acts_.dres, inputs_, N, C);
    lap("embedding_bwd");
    grads_ready(0, block_begin_.front());
}

}  // namespace lmforge
