#include "model/gpt2.h"

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
    : Model(gpt2_param_layout(validated(cfg)), precision), cfg_(cfg), gemm_(gemm), recompute_(recompute) {
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
    if (g_.score != nullptr) accumulated_grads_.emplace_back(g_.score, static_cast<size_t>(cfg_.num_labels * C));
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

void Gpt2::linear_forward(float* out, const float* inp, const uint16_t* inp_h, const float* w, const float* b,
                          int64_t N, int64_t C, int64_t OC) {
    if (precision_ == Precision::Fp32) {
        matmul_forward(gemm_, out, inp, w, b, N, C, OC);
    } else {
        matmul_forward_bf16(gemm_, out, inp_h, half(w), b, N, C, OC);
    }
}

void Gpt2::attention_branch(int64_t l, const float* residual) {
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd;
    const Gpt2LayerParams& w = p_.h[l];
    const Gpt2LayerActs& a = acts_.layers[l];
    linear_forward(a.qkv, a.ln1, a.ln1_h, w.c_attn_weight, w.c_attn_bias, N, C, 3 * C);
    lap("matmul_fwd");
    attention_forward(a.atty, a.att_lse, a.qkv, B, T, C, cfg_.n_head, cfg_.n_head);
    if (precision_ == Precision::Bf16) to_bf16(a.atty_h, a.atty, N * C);
    lap("attention_fwd");
    linear_forward(acts_.proj, a.atty, a.atty_h, w.attn_c_proj_weight, w.attn_c_proj_bias, N, C, C);
    lap("matmul_fwd");
    norm(ln2_out(l), a.res2, residual, acts_.proj, N);
    lap("residual_layernorm_fwd");
}

void Gpt2::mlp_hidden(int64_t l) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    const Gpt2LayerParams& w = p_.h[l];
    const Gpt2LayerActs& a = acts_.layers[l];
    linear_forward(a.fch, a.ln2, a.ln2_h, w.c_fc_weight, w.c_fc_bias, N, C, 4 * C);
    lap("matmul_fwd");
    gelu_forward_layer(l);
    lap("gelu_fwd");
}

void Gpt2::gelu_forward_layer(int64_t l) {
    const int64_t n = B_ * T_ * 4 * cfg_.n_embd;
    const Gpt2LayerActs& a = acts_.layers[l];
    if (precision_ == Precision::Bf16) {
        gelu_forward(a.fch_gelu_h, a.fch, n);
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

kernels::LmHeadLossShape Gpt2::lm_head_shape(int64_t rows) const {
    // The chunk and block of the planned rows, which the scratch is sized for (rows <= B·T).
    return {.N = rows, .C = cfg_.n_embd, .V = cfg_.vocab_size, .Vp = cfg_.padded_vocab(),
            .chunk = lm_head_chunk(B_ * T_, cfg_.vocab_size), .rows = lm_head_rows(B_ * T_, cfg_.vocab_size)};
}

void Gpt2::plan(int64_t B, int64_t T) {
    if (B <= 0) throw InputError(fmt::format("batch size B = {} must be positive", B));
    if (T <= 0 || T > cfg_.block_size) {
        throw InputError(
            fmt::format("sequence length T = {} must lie in 1..block_size = {}", T, cfg_.block_size),
            "shorten the sequence or raise block_size");
    }
    if (B == B_ && T == T_) return;
    acts_ = plan_gpt2_acts(cfg_, B, T, precision_, recompute_, head_one_pass(), arena_);
    pooled_rows_.assign(B, 0);
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

void Gpt2::forward_body(const int32_t* inputs) {
    if (profiler_ != nullptr) profiler_->start();
    refresh_half_weights();
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
    inputs_ = inputs;
}

void Gpt2::forward_start(const Batch& batch) {
    check_shape(batch);
    plan(batch.B, batch.T);
    check_tokens(batch.inputs.data(), false, "input");
    if (cfg_.num_labels > 0) {
        if (static_cast<int64_t>(batch.lengths.size()) != B_) throw Error("Gpt2: a classification batch needs lengths");
        for (int64_t b = 0; b < B_; b++) {
            if (batch.lengths[b] < 1 || batch.lengths[b] > T_) {
                throw InputError(fmt::format("sequence {} has length {}, outside 1..{}", b, batch.lengths[b], T_));
            }
        }
        for (size_t b = 0; b < batch.labels.size(); b++) {
            if (batch.labels[b] < 0 || batch.labels[b] >= cfg_.num_labels) {
                throw InputError(fmt::format("label {} of sequence {} is outside 0..{}", batch.labels[b], b,
                                             cfg_.num_labels - 1),
                                 "labels are class indices below model.num_labels");
            }
        }
    } else if (!batch.targets.empty()) {
        check_tokens(batch.targets.data(), true, "target");
    }
    forward_body(batch.inputs.data());
}

LossSum Gpt2::forward_backward(const Batch& batch, float grad_scale, bool accumulate) {
    const bool classify = cfg_.num_labels > 0;
    if (classify ? batch.labels.empty() : batch.targets.empty()) {
        throw Error(fmt::format("Gpt2::forward_backward needs {}", classify ? "labels" : "targets"));
    }
    forward_start(batch);
    const WeightGrad mode = begin_backward(accumulate);
    LossSum loss;
    if (classify) {
        loss = classify_head(batch.lengths.data(), batch.labels.data());
        classify_head_backward(batch.labels.data(), grad_scale, mode);
    } else {
        loss = lm_head(batch.targets.data(), &grad_scale, mode, batch.soft_targets);
        const kernels::SoftTargets* soft = batch.soft_targets;
        if (soft != nullptr && soft->hidden != nullptr) {  // d(ln_f output) of the counted rows: dln
            loss.cosine_sum = hidden_term(*soft, grad_scale, acts_.head_rows, loss.count, acts_.dln, acts_.lnf,
                                          acts_.lnf_h, cfg_.n_embd);
        }
    }
    backward_body(mode);
    return loss;
}

void Gpt2::final_hidden_rows(const int32_t* rows, int64_t M, float* out) const {
    const int64_t C = cfg_.n_embd;
    for (int64_t m = 0; m < M; m++) {
        const int64_t row = rows[m];
        if (acts_.lnf != nullptr) {
            std::copy_n(acts_.lnf + row * C, C, out + m * C);
        } else {
            for (int64_t c = 0; c < C; c++) out[m * C + c] = from_bf16(acts_.lnf_h[row * C + c]);
        }
    }
}

LossSum Gpt2::forward(const Batch& batch) {
    forward_start(batch);
    if (cfg_.num_labels > 0) return classify_head(batch.lengths.data(), batch.labels.empty() ? nullptr : batch.labels.data());
    if (!batch.targets.empty()) return lm_head(batch.targets.data(), nullptr, WeightGrad::Overwrite);
    // Logits only (sampling, evaluation by hand): the full (N, Vp) = lnf · wteᵀ, in a buffer
    // that training never allocates.
    const int64_t N = B_ * T_, Vp = cfg_.padded_vocab();
    if (logits_.size() != static_cast<size_t>(N * Vp)) logits_ = AlignedBuffer<float>(N * Vp);
    const backend::GemmShape shape{.M = N, .N = Vp, .K = cfg_.n_embd, .trans_b = true};
    if (precision_ == Precision::Fp32) {
        gemm_.run(shape, acts_.lnf, p_.wte, logits_.data());
    } else {
        gemm_.run_bf16(shape, acts_.lnf_h, half(p_.wte), logits_.data());
    }
    lap("lm_head_fwd");
    return {};
}

int64_t Gpt2::gather_head_rows(const int32_t* targets) {
    // Only positions with a target reach the LM head. When some are ignored (instruction
    // tuning's prompts), their rows are gathered first, so the head's cost follows the targets.
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    int64_t M = 0;
    for (int64_t i = 0; i < N; i++) {
        if (targets[i] == kIgnoreIndex) continue;
        acts_.head_rows[M] = static_cast<int32_t>(i);
        acts_.head_targets[M++] = targets[i];
    }
    head_gathered_ = M < N;
    for (int64_t m = 0; head_gathered_ && m < M; m++) {
        const int64_t row = acts_.head_rows[m];
        if (precision_ == Precision::Fp32) std::copy_n(acts_.lnf + row * C, C, acts_.head_x + m * C);
        if (precision_ == Precision::Bf16) std::copy_n(acts_.lnf_h + row * C, C, acts_.head_x_h + m * C);
    }
    return M;
}

Gpt2::HeadRows Gpt2::head_rows(const int32_t* targets) const {
    if (head_gathered_) {
        return {acts_.head_x,      acts_.head_x_h,          acts_.head_targets, acts_.head_losses,
                acts_.head_target_logit, acts_.head_row_max, acts_.head_dx};
    }
    return {acts_.lnf, acts_.lnf_h, targets, acts_.losses, acts_.target_logit, acts_.row_max, acts_.dln};
}

LossSum Gpt2::lm_head(const int32_t* targets, const float* grad_scale, WeightGrad mode, const SoftTargets* soft) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    const int64_t M = gather_head_rows(targets);
    check_soft_targets(soft, M);
    std::fill_n(acts_.losses, N, 0.0f);
    if (M == 0) {  // nothing to learn from: no gradient reaches the body
        if (grad_scale != nullptr) zero(acts_.dln, N * C);
        if (grad_scale != nullptr && mode == WeightGrad::Overwrite) zero(g_.wte, cfg_.padded_vocab() * C);
        return {};
    }
    const HeadRows r = head_rows(targets);
    const bool accumulate = mode == WeightGrad::Accumulate;
    if (grad_scale != nullptr && precision_ == Precision::Fp32) {
        lm_head_loss_train(gemm_, lm_head_shape(M), r.losses, acts_.lse, r.dx, g_.wte, nullptr, accumulate, r.x,
                           p_.wte, nullptr, r.targets, *grad_scale, acts_.logits_chunk, acts_.logits_chunk,
                           r.target_logit, r.row_max, soft);
    } else if (grad_scale != nullptr) {
        lm_head_loss_train(gemm_, lm_head_shape(M), r.losses, acts_.lse, r.dx, g_.wte, nullptr, accumulate, r.x_h,
                           half(p_.wte), nullptr, r.targets, *grad_scale, acts_.logits_chunk,
                           acts_.dlogits_chunk_h, r.target_logit, r.row_max, soft);
    } else if (precision_ == Precision::Fp32) {
        lm_head_loss_forward(gemm_, lm_head_shape(M), r.losses, acts_.lse, r.x, p_.wte, nullptr, r.targets,
                             acts_.logits_chunk, r.target_logit, r.row_max);
    } else {
        lm_head_loss_forward(gemm_, lm_head_shape(M), r.losses, acts_.lse, r.x_h, half(p_.wte), nullptr, r.targets,
                             acts_.logits_chunk, r.target_logit, r.row_max);
    }
    lap(grad_scale != nullptr ? "lm_head_loss_fwd_bwd" : "lm_head_loss_fwd");
    LossSum loss = sum_head_losses(r, M);
    if (soft != nullptr && grad_scale != nullptr) loss.soft_sum = sum_soft_losses(*soft);
    if (head_gathered_) {  // back to positions: token_losses() and target_is_top() index by them
        for (int64_t m = 0; m < M; m++) {
            const int64_t row = acts_.head_rows[m];
            acts_.losses[row] = r.losses[m];
            acts_.target_logit[row] = r.target_logit[m];
            acts_.row_max[row] = r.row_max[m];
        }
        if (grad_scale != nullptr) scatter_head_dx(M);
    }
    return loss;
}

LossSum Gpt2::sum_head_losses(const HeadRows& rows, int64_t M) const {
    LossSum loss{.count = M};
    for (int64_t m = 0; m < M; m++) {
        loss.sum += rows.losses[m];
        loss.correct += rows.target_logit[m] >= rows.row_max[m];
    }
    return loss;
}

void Gpt2::scatter_head_dx(int64_t M) {
    const int64_t C = cfg_.n_embd;
    zero(acts_.dln, B_ * T_ * C);
    for (int64_t m = 0; m < M; m++) std::copy_n(acts_.head_dx + m * C, C, acts_.dln + acts_.head_rows[m] * C);
}

LossSum Gpt2::classify_head(const int32_t* lengths, const int32_t* labels) {
    const int64_t B = B_, T = T_, C = cfg_.n_embd, L = cfg_.num_labels;
    // Pool: each sequence's hidden state at its last real position (after ln_f), in fp32.
    for (int64_t b = 0; b < B; b++) {
        const int64_t row = b * T + lengths[b] - 1;
        float* h = acts_.pooled + b * C;
        if (precision_ == Precision::Fp32) {
            std::copy_n(acts_.lnf + row * C, C, h);
        } else {
            for (int64_t c = 0; c < C; c++) h[c] = from_bf16(acts_.lnf_h[row * C + c]);
        }
        pooled_rows_[b] = row;
    }
    classifier_forward(acts_.class_logits, acts_.class_losses, acts_.pooled, p_.score, nullptr, labels, B, C, L);
    lap("classifier_fwd");
    if (labels == nullptr) return {};
    return classification_losses(acts_.class_losses, acts_.class_logits, labels, B, L);
}

void Gpt2::classify_head_backward(const int32_t* labels, float dloss, WeightGrad mode) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    const bool accumulate = mode == WeightGrad::Accumulate;
    classifier_backward(acts_.pooled_grad, g_.score, nullptr, accumulate, acts_.class_logits, acts_.pooled,
                        p_.score, labels, dloss, B_, C, cfg_.num_labels);
    // Only the pooled rows reach the head: d(ln_f output) is zero elsewhere.
    zero(acts_.dln, N * C);
    for (int64_t b = 0; b < B_; b++) std::copy_n(acts_.pooled_grad + b * C, C, acts_.dln + pooled_rows_[b] * C);
    if (!accumulate) zero(g_.wte, cfg_.padded_vocab() * C);  // no LM head writes it first
    lap("classifier_bwd");
}

void Gpt2::backward_body(WeightGrad mode) {
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd, NH = cfg_.n_head;
    const float* last = cfg_.n_layer > 0 ? acts_.layers.back().res3 : acts_.encoded;
    zero(acts_.dres, N * C);
    lap("zero_scratch");
    layernorm_backward(acts_.dres, g_.ln_f_weight, g_.ln_f_bias, acts_.dln, last, p_.ln_f_weight,
                       acts_.lnf_mean, acts_.lnf_rstd, N, C);
    lap("layernorm_bwd");
    grads_ready(block_begin_.back(), layout_.total());

    // acts_.dres holds d(loss)/d(block output); each block adds its branches' gradients to it.
    for (int64_t l = cfg_.n_layer - 1; l >= 0; l--) {
        const Gpt2LayerParams& w = p_.h[l];
        const Gpt2LayerParams& dw = g_.h[l];
        const Gpt2LayerActs& a = acts_.layers[l];
        const float* residual = l > 0 ? acts_.layers[l - 1].res3 : acts_.encoded;
        recompute_block(l, residual);

        // MLP branch: res3 = res2 + c_proj(gelu(c_fc(ln_2(res2)))).
        linear_backward(acts_.dfch, dw.mlp_c_proj_weight, dw.mlp_c_proj_bias, acts_.dres, a.fch_gelu,
                        a.fch_gelu_h, w.mlp_c_proj_weight, N, 4 * C, C, mode);
        lap("matmul_bwd");
        if (precision_ == Precision::Fp32) {
            gelu_backward(acts_.dfch, acts_.dfch, a.fch, N * 4 * C);  // in place: d(GELU output) is not read again
            lap("gelu_bwd");
            linear_backward(acts_.dln, dw.c_fc_weight, dw.c_fc_bias, acts_.dfch, a.ln2, a.ln2_h, w.c_fc_weight,
                            N, C, 4 * C, mode);
        } else {  // c_fc's GEMMs read the gradient in bf16: written so at once, with c_fc's bias sums
            gelu_backward_bf16_bias(acts_.dout_h, dw.c_fc_bias, acts_.dfch, a.fch, N, 4 * C);
            lap("gelu_bwd");
            matmul_backward_bf16(gemm_, acts_.dln, dw.c_fc_weight, nullptr, nullptr, acts_.dout_h, a.ln2_h,
                                 half(w.c_fc_weight), N, C, 4 * C, mode);
        }
        lap("matmul_bwd");
        layernorm_backward(acts_.dres, dw.ln_2_weight, dw.ln_2_bias, acts_.dln, a.res2,
                           w.ln_2_weight, a.ln2_mean, a.ln2_rstd, N, C);
        lap("layernorm_bwd");

        // Attention branch: res2 = residual + c_proj(attention(c_attn(ln_1(residual)))).
        linear_backward(acts_.datty, dw.attn_c_proj_weight, dw.attn_c_proj_bias, acts_.dres, a.atty,
                        a.atty_h, w.attn_c_proj_weight, N, C, C, mode);
        lap("matmul_bwd");
        attention_backward(acts_.dqkv, acts_.datty, a.atty, a.att_lse, a.qkv, B, T, C, NH, NH);
        lap("attention_bwd");
        linear_backward(acts_.dln, dw.c_attn_weight, dw.c_attn_bias, acts_.dqkv, a.ln1, a.ln1_h,
                        w.c_attn_weight, N, C, 3 * C, mode);
        lap("matmul_bwd");
        layernorm_backward(acts_.dres, dw.ln_1_weight, dw.ln_1_bias, acts_.dln, residual,
                           w.ln_1_weight, a.ln1_mean, a.ln1_rstd, N, C);
        lap("layernorm_bwd");
        grads_ready(block_begin_[l], block_begin_[l + 1]);
    }
    encoder_backward(g_.wte, g_.wpe, acts_.dres, inputs_, B, T, C);
    lap("encoder_bwd");
    grads_ready(0, block_begin_.front());
}


}  // namespace lmforge
