#include "model/gpt2.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>


#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/bf16.h"
#include "kernels/classifier.h"
#include "kernels/crossentropy.h"
#include "kernels/lm_head_loss.h"
#include "kernels/encoder.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/residual.h"

namespace lmforge {

using namespace kernels;

Gpt2::Gpt2(const Gpt2Config& cfg, backend::Gemm& gemm, Precision precision, Recompute recompute)
    : CausalLm(gpt2_param_layout(validated(cfg)), precision, gemm,
               {.C = cfg.n_embd, .V = cfg.vocab_size, .Vp = cfg.padded_vocab(), .L = cfg.num_labels}),
      cfg_(cfg),
      recompute_(recompute) {
    p_ = bind_gpt2_params(cfg_, layout_, params_.data());
    const int64_t C = cfg_.n_embd;
    accumulated_grads_ = {{grad_of(p_.wpe), static_cast<size_t>(cfg_.block_size * C)},
                          {grad_of(p_.ln_f_weight), static_cast<size_t>(C)},
                          {grad_of(p_.ln_f_bias), static_cast<size_t>(C)}};
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        block_begin_.push_back(layout_.find(fmt::format("h.{}.ln_1.weight", l)).offset);
    }
    block_begin_.push_back(layout_.find("ln_f.weight").offset);
    if (p_.score != nullptr) {
        accumulated_grads_.emplace_back(grad_of(p_.score), static_cast<size_t>(cfg_.num_labels * C));
    }
    for (int64_t i = 0; i < cfg_.n_layer; i++) {
        const Gpt2LayerParams l = layer_grads(i);
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

void Gpt2::linear_forward(float* out, const float* inp, const uint16_t* inp_h, const float* w, const float* b,
                          int64_t N, int64_t C, int64_t OC) {
    if (precision_ == Precision::Fp32) {
        matmul_forward(gemm_, out, inp, w, b, N, C, OC);
    } else {
        matmul_forward_bf16(gemm_, out, inp_h, half(w), b, N, C, OC);
    }
}

void Gpt2::linear_forward(float* out, uint16_t* out_h, const float* inp, const uint16_t* inp_h, const float* w,
                          const float* b, int64_t N, int64_t C, int64_t OC) {
    if (precision_ == Precision::Fp32) {
        matmul_forward(gemm_, out, inp, w, b, N, C, OC);
    } else {
        matmul_forward_bf16(gemm_, out_h, inp_h, half(w), b, N, C, OC);
    }
}

void Gpt2::attention_branch(int64_t l, const float* residual) {
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
    const Gpt2LayerParams& w = p_.h[l];
    const Gpt2LayerActs& a = acts_.layers[l];
    linear_forward(a.qkv, a.qkv_h, a.ln1, a.ln1_h, w.c_attn_weight, w.c_attn_bias, N, C, 3 * C);
    lap("matmul_fwd");
    if (precision_ == Precision::Fp32) {
        attention_forward(a.atty, a.att_lse, a.qkv, B, T, C, NH, NH, {}, attention_math());
    } else {
        attention_forward(a.atty, a.att_lse, a.qkv_h, B, T, C, NH, NH, {}, attention_math());
        to_bf16(acts_.atty_h, a.atty, N * C);
    }
    lap("attention_fwd");
    linear_forward(acts_.proj, a.atty, acts_.atty_h, w.attn_c_proj_weight, w.attn_c_proj_bias, N, C, C);
    lap("matmul_fwd");
    norm(ln2_out(l), a.res2, residual, acts_.proj, N);
    lap("residual_layernorm_fwd");
}

void Gpt2::mlp_hidden(int64_t l) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    const Gpt2LayerParams& w = p_.h[l];
    const Gpt2LayerActs& a = acts_.layers[l];
    linear_forward(a.fch, a.fch_h, a.ln2, a.ln2_h, w.c_fc_weight, w.c_fc_bias, N, C, 4 * C);
    lap("matmul_fwd");
    gelu_forward_layer(l);
    lap("gelu_fwd");
}

void Gpt2::gelu_forward_layer(int64_t l) {
    const int64_t n = B_ * T_ * 4 * cfg_.n_embd;
    const Gpt2LayerActs& a = acts_.layers[l];
    if (precision_ == Precision::Bf16) {
        gelu_forward(a.fch_gelu_h, a.fch_h, n);
    } else {
        gelu_forward(a.fch_gelu, a.fch, n);
    }
}

void Gpt2::mlp_projection(int64_t l) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    const Gpt2LayerParams& w = p_.h[l];
    const Gpt2LayerActs& a = acts_.layers[l];
    linear_forward(acts_.proj, a.fch_gelu, a.fch_gelu_h, w.mlp_c_proj_weight, w.mlp_c_proj_bias, N, 4 * C, C);
    lap("matmul_fwd");
}

void Gpt2::recompute_block(int64_t l, const float* residual) {
    // The last block's activations are still in the shared buffers: nothing ran after it.
    if (recompute_ == Recompute::None || l == cfg_.n_layer - 1) return;
    if (recompute_ == Recompute::Block) {
        norm(ln1_out(l), nullptr, residual, nullptr, B_ * T_);  // same arithmetic as the fused pass
        lap("recompute");
        attention_branch(l, residual);
        mlp_hidden(l);
    } else {  // Gelu: the layernorms' and GELU's outputs, one elementwise pass each
        norm(ln1_out(l), nullptr, residual, nullptr, B_ * T_);
        norm(ln2_out(l), nullptr, acts_.layers[l].res2, nullptr, B_ * T_);
        gelu_forward_layer(l);
    }
    lap("recompute");
}

Gpt2::LayerNormOut Gpt2::ln1_out(int64_t l) const {
    const Gpt2LayerActs& a = acts_.layers[l];
    return {a.ln1, a.ln1_h, a.ln1_mean, a.ln1_rstd, p_.h[l].ln_1_weight, p_.h[l].ln_1_bias};
}

Gpt2::LayerNormOut Gpt2::ln2_out(int64_t l) const {
    const Gpt2LayerActs& a = acts_.layers[l];
    return {a.ln2, a.ln2_h, a.ln2_mean, a.ln2_rstd, p_.h[l].ln_2_weight, p_.h[l].ln_2_bias};
}

Gpt2::LayerNormOut Gpt2::lnf_out() const {
    return {acts_.lnf, acts_.lnf_h, acts_.lnf_mean, acts_.lnf_rstd, p_.ln_f_weight, p_.ln_f_bias};
}

void Gpt2::norm(const LayerNormOut& o, float* res, const float* a, const float* b, int64_t N) {
    const int64_t C = cfg_.n_embd;
    const bool half = precision_ == Precision::Bf16;
    if (b == nullptr && half) layernorm_forward(o.out_h, o.mean, o.rstd, a, o.weight, o.bias, N, C);
    if (b == nullptr && !half) layernorm_forward(o.out, o.mean, o.rstd, a, o.weight, o.bias, N, C);
    if (b != nullptr && half) residual_layernorm_forward(res, o.out_h, o.mean, o.rstd, a, b, o.weight, o.bias, N, C);
    if (b != nullptr && !half) residual_layernorm_forward(res, o.out, o.mean, o.rstd, a, b, o.weight, o.bias, N, C);
}

void Gpt2::linear_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                           const uint16_t* inp_h, const float* w, int64_t N, int64_t C, int64_t OC,
                           WeightGrad mode) {
    if (precision_ == Precision::Fp32) {
        matmul_backward(gemm_, dinp, dw, db, dout, inp, w, N, C, OC, mode);
        return;
    }
    to_bf16_with_bias_backward(acts_.dout_h, db, dout, N, OC);
    matmul_backward_bf16(gemm_, dinp, dw, nullptr, nullptr, acts_.dout_h, inp_h, half(w), N, C, OC, mode);
}

void Gpt2::norm_backward(float* dweight, float* dbias, const float* inp, const LayerNormOut& o,
                         bool projection_below) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    if (precision_ == Precision::Bf16 && projection_below) {
        layernorm_backward(acts_.dres, acts_.dout_h, acts_.dres_sums, dweight, dbias, acts_.dln, inp, o.weight,
                           o.mean, o.rstd, N, C);
    } else {
        layernorm_backward(acts_.dres, dweight, dbias, acts_.dln, inp, o.weight, o.mean, o.rstd, N, C);
    }
    lap("layernorm_bwd");
}

void Gpt2::projection_backward(float* dinp, float* dw, float* db, const float* inp, const uint16_t* inp_h,
                               const float* w, int64_t C_in, WeightGrad mode) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    if (precision_ == Precision::Fp32) {
        matmul_backward(gemm_, dinp, dw, db, acts_.dres, inp, w, N, C_in, C, mode);
    } else {
        for (int64_t c = 0; c < C; c++) db[c] += acts_.dres_sums[c];
        matmul_backward_bf16(gemm_, dinp, dw, nullptr, nullptr, acts_.dout_h, inp_h, half(w), N, C_in, C, mode);
    }
    lap("matmul_bwd");
}

void Gpt2::plan_body(int64_t B, int64_t T) {
    acts_ = plan_gpt2_acts(cfg_, B, T, precision_, recompute_, arena_);
}

Gpt2::HeadIo Gpt2::head_io() const {
    const uint16_t* wte_h = precision_ == Precision::Bf16 ? half(p_.wte) : nullptr;
    return {acts_.lnf, acts_.lnf_h, acts_.dln, p_.wte, wte_h, p_.score};
}

Gpt2::HeadGrads Gpt2::head_grads() {
    // The tied embedding is too large for the bf16 gradients' window: written in bf16 directly.
    return {grad_out(p_.wte), p_.score != nullptr ? grad_of(p_.score) : nullptr};
}

void Gpt2::open_head_grads() { open_grads(block_begin_.back(), layout_.total()); }

int64_t Gpt2::grad_window() const {
    const int64_t embeddings = block_begin_.front() - (p_.wpe - params_.data());  // wpe (wte is written in bf16)
    int64_t widest = std::max(embeddings, layout_.total() - block_begin_.back());
    for (size_t l = 0; l + 1 < block_begin_.size(); l++) {
        widest = std::max(widest, block_begin_[l + 1] - block_begin_[l]);
    }
    return widest;
}

Gpt2LayerParams Gpt2::layer_grads(int64_t l) {
    const Gpt2LayerParams& w = p_.h[l];
    return {grad_of(w.ln_1_weight),       grad_of(w.ln_1_bias),        grad_of(w.c_attn_weight),
            grad_of(w.c_attn_bias),       grad_of(w.attn_c_proj_weight), grad_of(w.attn_c_proj_bias),
            grad_of(w.ln_2_weight),       grad_of(w.ln_2_bias),        grad_of(w.c_fc_weight),
            grad_of(w.c_fc_bias),         grad_of(w.mlp_c_proj_weight), grad_of(w.mlp_c_proj_bias)};
}

void Gpt2::head_matrix_untouched() {
    grad_out(p_.wte).zero(cfg_.padded_vocab() * cfg_.n_embd);
}

void Gpt2::forward_body(const int32_t* inputs) {
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd;
    encoder_forward(acts_.encoded, inputs, p_.wte, p_.wpe, B, T, C);
    lap("encoder_fwd");
    // Each residual add is fused with the layernorm that reads its result: the next block's
    // ln_1 or, after the last block, ln_f. Only the first layernorm stands alone.
    norm(cfg_.n_layer > 0 ? ln1_out(0) : lnf_out(), nullptr, acts_.encoded, nullptr, N);
    lap("layernorm_fwd");
    const float* residual = acts_.encoded;
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        const Gpt2LayerActs& a = acts_.layers[l];
        attention_branch(l, residual);
        mlp_hidden(l);
        mlp_projection(l);
        norm(l + 1 < cfg_.n_layer ? ln1_out(l + 1) : lnf_out(), a.res3, a.res2, acts_.proj, N);
        lap("residual_layernorm_fwd");
        residual = a.res3;
    }
}

// The MLP branch: res3 = res2 + c_proj(gelu(c_fc(ln_2(res2)))).
void Gpt2::mlp_backward(int64_t l, const Gpt2LayerParams& dw, WeightGrad mode) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    const Gpt2LayerParams& w = p_.h[l];
    const Gpt2LayerActs& a = acts_.layers[l];
    projection_backward(acts_.dfch, dw.mlp_c_proj_weight, dw.mlp_c_proj_bias, a.fch_gelu, a.fch_gelu_h,
                        w.mlp_c_proj_weight, 4 * C, mode);
    if (precision_ == Precision::Fp32) {
        gelu_backward(acts_.dfch, acts_.dfch, a.fch, N * 4 * C);  // in place: d(GELU output) is not read again
        lap("gelu_bwd");
        linear_backward(acts_.dln, dw.c_fc_weight, dw.c_fc_bias, acts_.dfch, a.ln2, a.ln2_h, w.c_fc_weight, N, C,
                        4 * C, mode);
    } else {  // c_fc's GEMMs read the gradient in bf16: written so at once, with c_fc's bias sums
        gelu_backward_bf16_bias(acts_.dout_h, dw.c_fc_bias, acts_.dfch, a.fch_h, N, 4 * C);
        lap("gelu_bwd");
        matmul_backward_bf16(gemm_, acts_.dln, dw.c_fc_weight, nullptr, nullptr, acts_.dout_h, a.ln2_h,
                             half(w.c_fc_weight), N, C, 4 * C, mode);
    }
    lap("matmul_bwd");
    norm_backward(dw.ln_2_weight, dw.ln_2_bias, a.res2, ln2_out(l), true);
}

// The attention branch: res2 = residual + c_proj(attention(c_attn(ln_1(residual)))).
void Gpt2::attention_branch_backward(int64_t l, const float* residual, const Gpt2LayerParams& dw, WeightGrad mode) {
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
    const Gpt2LayerParams& w = p_.h[l];
    const Gpt2LayerActs& a = acts_.layers[l];
    if (precision_ == Precision::Bf16) {
        to_bf16(acts_.atty_h, a.atty, N * C);  // c_proj's input, as forward rounded it
        lap("recompute");
    }
    projection_backward(acts_.datty, dw.attn_c_proj_weight, dw.attn_c_proj_bias, a.atty, acts_.atty_h,
                        w.attn_c_proj_weight, C, mode);
    if (precision_ == Precision::Fp32) {
        attention_backward(acts_.dqkv, acts_.datty, a.atty, a.att_lse, a.qkv, B, T, C, NH, NH, {}, attention_math());
    } else {
        attention_backward(acts_.dqkv, acts_.datty, a.atty, a.att_lse, a.qkv_h, B, T, C, NH, NH, {},
                           attention_math());
    }
    lap("attention_bwd");
    linear_backward(acts_.dln, dw.c_attn_weight, dw.c_attn_bias, acts_.dqkv, a.ln1, a.ln1_h, w.c_attn_weight, N, C,
                    3 * C, mode);
    lap("matmul_bwd");
    norm_backward(dw.ln_1_weight, dw.ln_1_bias, residual, ln1_out(l), l > 0);
}

void Gpt2::backward_body(WeightGrad mode) {
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd;
    const float* last = cfg_.n_layer > 0 ? acts_.layers.back().res3 : acts_.encoded;
    zero(acts_.dres, N * C);
    lap("zero_scratch");
    norm_backward(grad_of(p_.ln_f_weight), grad_of(p_.ln_f_bias), last, lnf_out(), cfg_.n_layer > 0);
    grads_ready(block_begin_.back(), layout_.total());

    // acts_.dres holds d(loss)/d(block output); each block adds its branches' gradients to it.
    for (int64_t l = cfg_.n_layer - 1; l >= 0; l--) {
        open_grads(block_begin_[l], block_begin_[l + 1]);
        const Gpt2LayerParams dw = layer_grads(l);
        const float* residual = l > 0 ? acts_.layers[l - 1].res3 : acts_.encoded;
        recompute_block(l, residual);
        mlp_backward(l, dw, mode);
        attention_branch_backward(l, residual, dw, mode);
        grads_ready(block_begin_[l], block_begin_[l + 1]);
    }
    open_grads(p_.wpe - params_.data(), block_begin_.front());
    const GradOut dwte = grad_out(p_.wte);
    if (dwte.bf16 != nullptr) {
        encoder_backward(dwte.bf16, grad_of(p_.wpe), acts_.dres, inputs_, B, T, C);
    } else {
        encoder_backward(dwte.f32, grad_of(p_.wpe), acts_.dres, inputs_, B, T, C);
    }
    lap("encoder_bwd");
    grads_ready(0, block_begin_.front());
}


}  // namespace lmforge
