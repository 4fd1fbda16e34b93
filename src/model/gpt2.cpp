#include "model/gpt2.h"

#include <fmt/format.h>

#include <cstring>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/bf16.h"
#include "kernels/crossentropy.h"
#include "kernels/encoder.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/residual.h"

namespace lmforge {

using namespace kernels;

namespace {
void zero(float* x, int64_t n) { std::memset(x, 0, sizeof(float) * n); }
}  // namespace

Gpt2::Gpt2(const Gpt2Config& cfg, backend::Gemm& gemm, Precision precision)
    : cfg_(cfg), gemm_(gemm), precision_(precision) {
    cfg_.validate();
    layout_ = gpt2_param_layout(cfg_);
    params_ = AlignedBuffer<float>(layout_.total());
    grads_ = AlignedBuffer<float>(layout_.total());
    if (precision_ == Precision::Bf16) params_h_ = AlignedBuffer<uint16_t>(layout_.total());
    p_ = bind_gpt2_params(cfg_, layout_, params_.data());
    g_ = bind_gpt2_params(cfg_, layout_, grads_.data());
    const int64_t C = cfg_.n_embd;
    accumulated_grads_ = {{g_.wpe, static_cast<size_t>(cfg_.block_size * C)},
                          {g_.ln_f_weight, static_cast<size_t>(C)},
                          {g_.ln_f_bias, static_cast<size_t>(C)}};
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        block_begin_.push_back(layout_.find(fmt::format("h.{}.ln_1.weight", l)).offset);
    }
    block_begin_.push_back(layout_.find("ln_f.weight").offset);
    for (const Gpt2LayerParams& l : g_.h) {
        for (auto [grad, n] : {std::pair{l.ln_1_weight, C}, {l.ln_1_bias, C}, {l.c_attn_bias, 3 * C},
                               {l.attn_c_proj_bias, C}, {l.ln_2_weight, C}, {l.ln_2_bias, C},
                               {l.c_fc_bias, 4 * C}, {l.mlp_c_proj_bias, C}}) {
            accumulated_grads_.emplace_back(grad, static_cast<size_t>(n));
        }
    }
}

void Gpt2::init_weights(uint64_t seed) {
    Rng rng(seed);
    init_gpt2_params(cfg_, layout_, params_.data(), rng);
    weights_changed();
}

void Gpt2::linear_forward(float* out, const float* inp, uint16_t* inp_h, const float* w, const float* b,
                          int64_t N, int64_t C, int64_t OC) {
    if (precision_ == Precision::Fp32) {
        matmul_forward(gemm_, out, inp, w, b, N, C, OC);
        return;
    }
    to_bf16(inp_h, inp, N * C);
    matmul_forward_bf16(gemm_, out, inp_h, half(w), b, N, C, OC);
}

void Gpt2::linear_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                           const uint16_t* inp_h, const float* w, int64_t N, int64_t C, int64_t OC,
                           WeightGrad mode) {
    if (precision_ == Precision::Fp32) {
        matmul_backward(gemm_, dinp, dw, db, dout, inp, w, N, C, OC, mode);
        return;
    }
    to_bf16(acts_.dout_h, dout, N * OC);
    matmul_backward_bf16(gemm_, dinp, dw, db, dout, acts_.dout_h, inp_h, half(w), N, C, OC, mode);
}

void Gpt2::plan(int64_t B, int64_t T) {
    if (B <= 0) throw InputError(fmt::format("batch size B = {} must be positive", B));
    if (T <= 0 || T > cfg_.block_size) {
        throw InputError(
            fmt::format("sequence length T = {} must lie in 1..block_size = {}", T, cfg_.block_size),
            "shorten the sequence or raise block_size");
    }
    if (B == B_ && T == T_) return;
    acts_ = plan_gpt2_acts(cfg_, B, T, precision_, arena_);
    B_ = B;
    T_ = T;
}

void Gpt2::check_tokens(const int32_t* ids, bool allow_ignore, const char* what) const {
    for (int64_t i = 0; i < B_ * T_; i++) {
        const int32_t id = ids[i];
        if ((id < 0 || id >= cfg_.vocab_size) && !(allow_ignore && id == kIgnoreIndex)) {
            throw InputError(fmt::format("{} token id {} at batch row {}, position {} is outside "
                                         "the vocabulary [0, {})",
                                         what, id, i / T_, i % T_, cfg_.vocab_size),
                             "the data was tokenized with a larger vocabulary than the model's");
        }
    }
}

float Gpt2::forward(const int32_t* inputs, const int32_t* targets) {
    if (B_ == 0) throw Error("Gpt2::forward before plan()");
    if (profiler_ != nullptr) profiler_->start();
    if (precision_ == Precision::Bf16 && half_stale_) {
        to_bf16(params_h_.data(), params_.data(), static_cast<int64_t>(params_.size()));
        half_stale_ = false;
    }
    check_tokens(inputs, false, "input");
    if (targets != nullptr) check_tokens(targets, true, "target");
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
    const int64_t V = cfg_.vocab_size, Vp = cfg_.padded_vocab();

    encoder_forward(acts_.encoded, inputs, p_.wte, p_.wpe, B, T, C);
    lap("encoder_fwd");
    const float* residual = acts_.encoded;
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        const Gpt2LayerParams& w = p_.h[l];
        const Gpt2LayerActs& a = acts_.layers[l];
        layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, residual, w.ln_1_weight, w.ln_1_bias,
                          N, C);
        lap("layernorm_fwd");
        linear_forward(a.qkv, a.ln1, a.ln1_h, w.c_attn_weight, w.c_attn_bias, N, C, 3 * C);
        lap("matmul_fwd");
        attention_forward(a.atty, a.att_lse, a.qkv, B, T, C, NH);
        lap("attention_fwd");
        linear_forward(a.attproj, a.atty, a.atty_h, w.attn_c_proj_weight, w.attn_c_proj_bias, N, C, C);
        lap("matmul_fwd");
        residual_forward(a.res2, residual, a.attproj, N * C);
        lap("residual_fwd");
        layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, w.ln_2_weight, w.ln_2_bias, N,
                          C);
        lap("layernorm_fwd");
        linear_forward(a.fch, a.ln2, a.ln2_h, w.c_fc_weight, w.c_fc_bias, N, C, 4 * C);
        lap("matmul_fwd");
        gelu_forward(a.fch_gelu, a.fch, N * 4 * C);
        lap("gelu_fwd");
        linear_forward(a.fcproj, a.fch_gelu, a.fch_gelu_h, w.mlp_c_proj_weight, w.mlp_c_proj_bias, N,
                       4 * C, C);
        lap("matmul_fwd");
        residual_forward(a.res3, a.res2, a.fcproj, N * C);
        lap("residual_fwd");
        residual = a.res3;
    }
    layernorm_forward(acts_.lnf, acts_.lnf_mean, acts_.lnf_rstd, residual, p_.ln_f_weight,
                      p_.ln_f_bias, N, C);
    lap("layernorm_fwd");
    // LM head tied to the embedding: logits (N, Vp) = lnf (N, C) · wteᵀ.
    if (precision_ == Precision::Fp32) {
        gemm_.run({.M = N, .N = Vp, .K = C, .trans_b = true}, acts_.lnf, p_.wte, acts_.logits);
    } else {
        to_bf16(acts_.lnf_h, acts_.lnf, N * C);
        gemm_.run_bf16({.M = N, .N = Vp, .K = C, .trans_b = true}, acts_.lnf_h, half(p_.wte), acts_.logits);
    }
    lap("lm_head_fwd");

    inputs_ = inputs;
    targets_ = targets;
    counted_ = 0;
    if (targets == nullptr) return 0.0f;
    crossentropy_forward(acts_.losses, acts_.lse, acts_.logits, targets, N, V, Vp);
    lap("crossentropy_fwd");
    double sum = 0.0;
    for (int64_t i = 0; i < N; i++) {
        if (targets[i] != kIgnoreIndex) {
            sum += acts_.losses[i];
            counted_++;
        }
    }
    return counted_ > 0 ? static_cast<float>(sum / counted_) : 0.0f;
}

void Gpt2::backward(float loss_scale) {
    if (targets_ == nullptr) throw Error("Gpt2::backward needs a forward with targets");
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
    const int64_t V = cfg_.vocab_size, Vp = cfg_.padded_vocab();
    const float dloss = counted_ > 0 ? loss_scale / static_cast<float>(counted_) : 0.0f;
    // After zero_grad(), the weight GEMMs overwrite their gradients; the rest start at zero.
    const WeightGrad mode = grads_stale_ ? WeightGrad::Overwrite : WeightGrad::Accumulate;
    if (grads_stale_) {
        for (std::span<float> g : accumulated_grads_) zero(g.data(), static_cast<int64_t>(g.size()));
        grads_stale_ = false;
    }

    if (profiler_ != nullptr) profiler_->start();
    // dwte is written here before encoder_backward adds the embedding's share.
    const backend::GemmShape dln_shape{.M = N, .N = C, .K = Vp};
    const backend::GemmShape dwte_shape{.M = Vp, .N = C, .K = N, .trans_a = true,
                                        .accumulate = mode == WeightGrad::Accumulate};
    if (precision_ == Precision::Fp32) {
        float* dlogits = acts_.logits;  // overwritten in place
        crossentropy_backward(dlogits, acts_.logits, acts_.lse, targets_, dloss, N, V, Vp);
        lap("crossentropy_bwd");
        gemm_.run(dln_shape, dlogits, p_.wte, acts_.dln);
        gemm_.run(dwte_shape, dlogits, acts_.lnf, g_.wte);
    } else {
        crossentropy_backward_bf16(acts_.dlogits_h, acts_.logits, acts_.lse, targets_, dloss, N, V, Vp);
        lap("crossentropy_bwd");
        gemm_.run_bf16(dln_shape, acts_.dlogits_h, half(p_.wte), acts_.dln);
        gemm_.run_bf16(dwte_shape, acts_.dlogits_h, acts_.lnf_h, g_.wte);
    }
    lap("lm_head_bwd");
    const float* last = cfg_.n_layer > 0 ? acts_.layers.back().res3 : acts_.encoded;
    zero(acts_.dres, N * C);
    lap("zero_scratch");
    layernorm_backward(acts_.dres, g_.ln_f_weight, g_.ln_f_bias, acts_.dln, last, p_.ln_f_weight,
                       acts_.lnf_mean, acts_.lnf_rstd, N, C);
    lap("layernorm_bwd");
    if (ready_hook_) ready_hook_(block_begin_.back(), layout_.total());

    // acts_.dres holds d(loss)/d(block output); each block adds its branches' gradients to it.
    for (int64_t l = cfg_.n_layer - 1; l >= 0; l--) {
        const Gpt2LayerParams& w = p_.h[l];
        const Gpt2LayerParams& dw = g_.h[l];
        const Gpt2LayerActs& a = acts_.layers[l];
        const float* residual = l > 0 ? acts_.layers[l - 1].res3 : acts_.encoded;

        // MLP branch: res3 = res2 + c_proj(gelu(c_fc(ln_2(res2)))).
        zero(acts_.dfch_gelu, N * 4 * C);
        lap("zero_scratch");
        linear_backward(acts_.dfch_gelu, dw.mlp_c_proj_weight, dw.mlp_c_proj_bias, acts_.dres, a.fch_gelu,
                        a.fch_gelu_h, w.mlp_c_proj_weight, N, 4 * C, C, mode);
        lap("matmul_bwd");
        zero(acts_.dfch, N * 4 * C);
        lap("zero_scratch");
        gelu_backward(acts_.dfch, acts_.dfch_gelu, a.fch, N * 4 * C);
        lap("gelu_bwd");
        zero(acts_.dln, N * C);
        lap("zero_scratch");
        linear_backward(acts_.dln, dw.c_fc_weight, dw.c_fc_bias, acts_.dfch, a.ln2, a.ln2_h, w.c_fc_weight,
                        N, C, 4 * C, mode);
        lap("matmul_bwd");
        layernorm_backward(acts_.dres, dw.ln_2_weight, dw.ln_2_bias, acts_.dln, a.res2,
                           w.ln_2_weight, a.ln2_mean, a.ln2_rstd, N, C);
        lap("layernorm_bwd");

        // Attention branch: res2 = residual + c_proj(attention(c_attn(ln_1(residual)))).
        zero(acts_.datty, N * C);
        lap("zero_scratch");
        linear_backward(acts_.datty, dw.attn_c_proj_weight, dw.attn_c_proj_bias, acts_.dres, a.atty,
                        a.atty_h, w.attn_c_proj_weight, N, C, C, mode);
        lap("matmul_bwd");
        zero(acts_.dqkv, N * 3 * C);
        lap("zero_scratch");
        attention_backward(acts_.dqkv, acts_.datty, a.atty, a.att_lse, a.qkv, B, T, C, NH);
        lap("attention_bwd");
        zero(acts_.dln, N * C);
        lap("zero_scratch");
        linear_backward(acts_.dln, dw.c_attn_weight, dw.c_attn_bias, acts_.dqkv, a.ln1, a.ln1_h,
                        w.c_attn_weight, N, C, 3 * C, mode);
        lap("matmul_bwd");
        layernorm_backward(acts_.dres, dw.ln_1_weight, dw.ln_1_bias, acts_.dln, residual,
                           w.ln_1_weight, a.ln1_mean, a.ln1_rstd, N, C);
        lap("layernorm_bwd");
        if (ready_hook_) ready_hook_(block_begin_[l], block_begin_[l + 1]);
    }
    encoder_backward(g_.wte, g_.wpe, acts_.dres, inputs_, B, T, C);
    lap("encoder_bwd");
    if (ready_hook_) ready_hook_(0, block_begin_.front());
    targets_ = nullptr;  // the logits are gone; another backward needs another forward
}


}  // namespace lmforge
