#include "model/bert.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/bf16.h"
#include "kernels/classifier.h"
#include "kernels/crossentropy.h"
#include "kernels/encoder.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/linear.h"
#include "kernels/lm_head_loss.h"
#include "kernels/relu.h"
#include "kernels/tanh.h"

namespace lmforge {

using namespace kernels;

Bert::Bert(const BertConfig& cfg, backend::Gemm& gemm, Precision precision)
    : Model(bert_param_layout(validated(cfg)), precision), cfg_(cfg), gemm_(gemm) {
    p_ = bind_bert_params(cfg_, layout_, params_.data());
    const BertTensorNames& names = bert_tensor_names(cfg_);
    const std::string word = fmt::format("{}.word_embeddings.weight", names.embeddings);
    // Everything but the weight matrices is only ever added to in backward: zeroed when stale.
    for (const ParamSpec& s : layout_.specs()) {
        const bool matrix = s.shape.size() == 2 && s.name.find("_embeddings") == std::string::npos;
        if (!matrix && s.name != word) {
            accumulated_grads_.emplace_back(grad_of(params_.data() + s.offset), static_cast<size_t>(s.numel));
        }
    }
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        layer_begin_.push_back(layout_.find(fmt::format("{}{}.{}.weight", names.layer_prefix, l, names.query)).offset);
    }
    layer_begin_.push_back(
        layout_.find(fmt::format("{}.weight", cfg_.num_labels > 0 ? names.pooler : names.mlm_dense)).offset);
}

int64_t Bert::grad_window() const {
    // The word embedding (the tied decoder) is written in bf16 directly; the rest of the
    // embeddings, each layer and the head go through the window.
    int64_t widest = layer_begin_.front() - (p_.position - params_.data());
    widest = std::max(widest, layout_.total() - layer_begin_.back());
    for (size_t l = 0; l + 1 < layer_begin_.size(); l++) {
        widest = std::max(widest, layer_begin_[l + 1] - layer_begin_[l]);
    }
    return widest;
}

BertLayerParams Bert::layer_grads(int64_t l) {
    const BertLayerParams& w = p_.layer[l];
    return {grad_of(w.qkv_weight),     grad_of(w.qkv_bias),      grad_of(w.attn_out_weight), grad_of(w.attn_out_bias),
            grad_of(w.attn_ln_weight), grad_of(w.attn_ln_bias),  grad_of(w.inter_weight),    grad_of(w.inter_bias),
            grad_of(w.out_weight),     grad_of(w.out_bias),      grad_of(w.out_ln_weight),   grad_of(w.out_ln_bias)};
}

void Bert::init_weights(uint64_t seed) {
    Rng rng(seed);
    init_bert_params(cfg_, layout_, params_.data(), rng);
    weights_changed();
}

void Bert::plan(int64_t B, int64_t T) {
    if (B <= 0) throw InputError(fmt::format("batch size B = {} must be positive", B));
    if (T <= 0 || T > cfg_.max_position) {
        throw InputError(fmt::format("sequence length T = {} must lie in 1..max_position = {}", T, cfg_.max_position),
                         "shorten the sequence or raise max_position");
    }
    if (B == B_ && T == T_) return;
    acts_ = plan_bert_acts(cfg_, B, T, precision_, kernels::lm_head_one_pass(gemm_, precision_ == Precision::Bf16),
                           arena_);
    B_ = B;
    T_ = T;
}

void Bert::final_hidden_rows(const int32_t* rows, int64_t M, float* out) const {
    const int64_t H = cfg_.hidden;
    for (int64_t m = 0; m < M; m++) std::copy_n(hidden() + static_cast<int64_t>(rows[m]) * H, H, out + m * H);
}

const float* Bert::hidden() const { return cfg_.n_layer > 0 ? acts_.layers.back().out : acts_.x0; }

void Bert::linear(float* out, const float* inp, const uint16_t* inp_h, const float* w, const float* b, int64_t N,
                  int64_t C, int64_t OC) {
    if (precision_ == Precision::Fp32) {
        linear_forward(gemm_, out, inp, w, b, N, C, OC);
    } else {
        linear_forward_bf16(gemm_, out, inp_h, half(w), b, N, C, OC);
    }
}

void Bert::linear(float* out, uint16_t* out_h, const float* inp, const uint16_t* inp_h, const float* w,
                  const float* b, int64_t N, int64_t C, int64_t OC) {
    if (precision_ == Precision::Fp32) {
        linear_forward(gemm_, out, inp, w, b, N, C, OC);
    } else {
        linear_forward_bf16(gemm_, out_h, inp_h, half(w), b, N, C, OC);
    }
}

void Bert::linear_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                           const uint16_t* inp_h, const float* w, int64_t N, int64_t C, int64_t OC, WeightGrad mode) {
    if (precision_ == Precision::Fp32) {
        kernels::linear_backward(gemm_, dinp, dw, db, dout, inp, w, N, C, OC, mode);
        return;
    }
    to_bf16_with_bias_backward(acts_.dout_h, db, dout, N, OC);
    linear_backward_bf16(gemm_, dinp, dw, nullptr, nullptr, acts_.dout_h, inp_h, half(w), N, C, OC, mode);
}

void Bert::half_copy(uint16_t* out_h, const float* x, int64_t n) {
    if (precision_ == Precision::Bf16) to_bf16(out_h, x, n);
}

void Bert::check_batch(const Batch& batch) const {
    const int64_t N = B_ * T_, V = cfg_.vocab_size;
    for (int64_t i = 0; i < N; i++) {
        if (batch.inputs[i] < 0 || batch.inputs[i] >= V) {
            throw InputError(fmt::format("input token id {} at batch row {}, position {} is outside the vocabulary "
                                         "[0, {})",
                                         batch.inputs[i], i / T_, i % T_, V),
                             "the data was tokenized with a larger vocabulary than the model's");
        }
    }
    for (int64_t b = 0; b < static_cast<int64_t>(batch.lengths.size()); b++) {
        if (batch.lengths[b] < 1 || batch.lengths[b] > T_) {
            throw InputError(fmt::format("sequence {} has length {}, outside 1..{}", b, batch.lengths[b], T_));
        }
    }
    for (int64_t i = 0; i < static_cast<int64_t>(batch.targets.size()); i++) {
        const int32_t t = batch.targets[i];
        if (t != kIgnoreIndex && (t < 0 || t >= V)) {
            throw InputError(fmt::format("target token id {} at batch row {}, position {} is outside the "
                                         "vocabulary [0, {})",
                                         t, i / T_, i % T_, V));
        }
    }
    for (size_t b = 0; b < batch.labels.size(); b++) {
        if (batch.labels[b] < 0 || batch.labels[b] >= cfg_.num_labels) {
            throw InputError(fmt::format("label {} of sequence {} is outside 0..{}", batch.labels[b], b,
                                         cfg_.num_labels - 1),
                             "labels are class indices below model.num_labels");
        }
    }
}

void Bert::forward_start(const Batch& batch) {
    check_shape(batch);
    plan(batch.B, batch.T);
    if (!batch.lengths.empty() && static_cast<int64_t>(batch.lengths.size()) != B_) {
        throw Error("Bert: a batch's lengths must have B entries");
    }
    check_batch(batch);
    if (batch.lengths.empty()) {
        const std::vector<int32_t> whole(static_cast<size_t>(B_), static_cast<int32_t>(T_));
        forward_body(batch.inputs.data(), whole.data());
    } else {
        forward_body(batch.inputs.data(), batch.lengths.data());
    }
}

void Bert::forward_body(const int32_t* inputs, const int32_t* lengths) {
    if (profiler_ != nullptr) profiler_->start();
    refresh_half_weights();
    lengths_.assign(lengths, lengths + B_);
    embeddings_forward(inputs);
    const float* x = acts_.x0;
    const uint16_t* x_h = acts_.x0_h;
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        attention_sublayer(l, x, x_h);
        mlp_sublayer(l);
        x = acts_.layers[l].out;
        x_h = acts_.layers[l].out_h;
    }
    inputs_ = inputs;
}

AttentionMask Bert::attention_mask() const { return {.causal = false, .key_len = lengths_.data()}; }

// x0 = LayerNorm(word + position [+ token type]); every token is of segment A (type 0), and
// DistilBERT has no segments.
void Bert::embeddings_forward(const int32_t* inputs) {
    const int64_t N = B_ * T_, H = cfg_.hidden;
    encoder_forward(acts_.embedded, inputs, p_.word, p_.position, B_, T_, H);
    if (p_.token_type != nullptr) {
#pragma omp parallel for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            float* e = acts_.embedded + n * H;
#pragma omp simd
            for (int64_t c = 0; c < H; c++) e[c] += p_.token_type[c];
        }
    }
    layernorm_forward(acts_.x0, acts_.x0_mean, acts_.x0_rstd, acts_.embedded, p_.emb_ln_weight, p_.emb_ln_bias, N, H,
                      cfg_.layer_norm_eps);
    half_copy(acts_.x0_h, acts_.x0, N * H);
    lap("embeddings_fwd");
}

// h1 = LayerNorm(res1), res1 = x + dense(attention(qkv(x))).
void Bert::attention_sublayer(int64_t l, const float* x, const uint16_t* x_h) {
    const int64_t B = B_, T = T_, N = B * T, H = cfg_.hidden;
    const BertLayerParams& w = p_.layer[l];
    const BertLayerActs& a = acts_.layers[l];
    linear(a.qkv, a.qkv_h, x, x_h, w.qkv_weight, w.qkv_bias, N, H, 3 * H);
    lap("matmul_fwd");
    if (precision_ == Precision::Fp32) {
        attention_forward(a.atty, a.att_lse, a.qkv, B, T, H, cfg_.n_head, cfg_.n_head, attention_mask(),
                          attention_math());
    } else {
        attention_forward(a.atty, a.att_lse, a.qkv_h, B, T, H, cfg_.n_head, cfg_.n_head, attention_mask(),
                          attention_math());
        half_copy(a.atty_h, a.atty, N * H);
    }
    lap("attention_fwd");
    linear(acts_.proj, a.atty, a.atty_h, w.attn_out_weight, w.attn_out_bias, N, H, H);
    lap("matmul_fwd");
    residual_layernorm_forward(a.res1, a.h1, a.h1_mean, a.h1_rstd, x, acts_.proj, w.attn_ln_weight, w.attn_ln_bias, N,
                               H, cfg_.layer_norm_eps);
    half_copy(a.h1_h, a.h1, N * H);
    lap("residual_layernorm_fwd");
}

// out = LayerNorm(res2), res2 = h1 + dense(gelu(dense(h1))).
void Bert::mlp_sublayer(int64_t l) {
    const int64_t N = B_ * T_, H = cfg_.hidden, I = cfg_.intermediate;
    const BertLayerParams& w = p_.layer[l];
    const BertLayerActs& a = acts_.layers[l];
    linear(a.inter, a.inter_h, a.h1, a.h1_h, w.inter_weight, w.inter_bias, N, H, I);
    lap("matmul_fwd");
    if (precision_ == Precision::Bf16) {
        gelu_erf_forward(a.gelu_h, a.inter_h, N * I);
    } else {
        gelu_erf_forward(a.gelu, a.inter, N * I);
    }
    lap("gelu_fwd");
    linear(acts_.proj, a.gelu, a.gelu_h, w.out_weight, w.out_bias, N, I, H);
    lap("matmul_fwd");
    residual_layernorm_forward(a.res2, a.out, a.out_mean, a.out_rstd, a.h1, acts_.proj, w.out_ln_weight,
                               w.out_ln_bias, N, H, cfg_.layer_norm_eps);
    half_copy(a.out_h, a.out, N * H);
    lap("residual_layernorm_fwd");
}

LossSum Bert::forward_backward(const Batch& batch, float grad_scale, bool accumulate) {
    const bool classify = cfg_.num_labels > 0;
    if (classify ? batch.labels.empty() : batch.targets.empty()) {
        throw Error(fmt::format("Bert::forward_backward needs {}", classify ? "labels" : "targets"));
    }
    forward_start(batch);
    const WeightGrad mode = begin_backward(accumulate);
    open_grads(layer_begin_.back(), layout_.total());  // the head's
    zero(acts_.dx, B_ * T_ * cfg_.hidden);
    LossSum loss;
    if (classify) {
        loss = classify_head(batch.labels.data());
        classify_head_backward(batch.labels.data(), grad_scale, mode);
    } else {
        loss = mlm_head(batch.targets.data(), &grad_scale, mode, batch.soft_targets);
        const kernels::SoftTargets* soft = batch.soft_targets;
        if (soft != nullptr && soft->hidden != nullptr) {  // d(encoder output) of the masked rows: dx
            loss.cosine_sum = hidden_term(*soft, grad_scale, acts_.mlm_rows, mlm_rows_, acts_.dx, hidden(), nullptr,
                                          cfg_.hidden);
        }
    }
    grads_ready(layer_begin_.back(), layout_.total());
    backward_body(mode);
    return loss;
}

LossSum Bert::forward(const Batch& batch) {
    forward_start(batch);
    if (cfg_.num_labels > 0) return classify_head(batch.labels.empty() ? nullptr : batch.labels.data());
    if (!batch.targets.empty()) return mlm_head(batch.targets.data(), nullptr, WeightGrad::Overwrite);
    mlm_transform_forward(nullptr);
    mlm_logits();
    return {};
}

int64_t Bert::mlm_transform_forward(const int32_t* targets) {
    // Only the rows with a target go through the head (all rows for logits): the transform is
    // per position, so gathering first is exact and saves most of the head's work.
    const int64_t N = B_ * T_, H = cfg_.hidden;
    int64_t M = 0;
    for (int64_t i = 0; i < N; i++) {
        if (targets == nullptr || targets[i] != kIgnoreIndex) {
            acts_.mlm_rows[M] = static_cast<int32_t>(i);
            acts_.mlm_targets[M] = targets != nullptr ? targets[i] : 0;
            M++;
        }
    }
    mlm_rows_ = M;
    const float* h = hidden();
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; m++) std::copy_n(h + static_cast<int64_t>(acts_.mlm_rows[m]) * H, H, acts_.mlm_in + m * H);
    half_copy(acts_.mlm_in_h, acts_.mlm_in, M * H);
    linear(acts_.mlm_t, acts_.mlm_in, acts_.mlm_in_h, p_.mlm_dense_weight, p_.mlm_dense_bias, M, H, H);
    gelu_erf_forward(acts_.mlm_g, acts_.mlm_t, M * H);
    layernorm_forward(acts_.mlm_z, acts_.mlm_mean, acts_.mlm_rstd, acts_.mlm_g, p_.mlm_ln_weight, p_.mlm_ln_bias, M, H,
                      cfg_.layer_norm_eps);
    half_copy(acts_.mlm_z_h, acts_.mlm_z, M * H);
    lap("mlm_transform_fwd");
    return M;
}

void Bert::mlm_logits() {
    const int64_t N = B_ * T_, H = cfg_.hidden, V = cfg_.vocab_size;
    if (logits_.size() != static_cast<size_t>(N * V)) logits_ = AlignedBuffer<float>(N * V);
    const backend::GemmShape shape{.M = N, .N = V, .K = H, .trans_b = true};
    if (precision_ == Precision::Fp32) {
        gemm_.run(shape, acts_.mlm_z, p_.word, logits_.data(), p_.mlm_bias);
    } else {
        gemm_.run_bf16(shape, acts_.mlm_z_h, half(p_.word), logits_.data(), p_.mlm_bias);
    }
    lap("lm_head_fwd");
}

LossSum Bert::mlm_head(const int32_t* targets, const float* grad_scale, WeightGrad mode, const SoftTargets* soft) {
    const int64_t N = B_ * T_, H = cfg_.hidden, V = cfg_.vocab_size;
    const int64_t M = mlm_transform_forward(targets);
    check_soft_targets(soft, M);
    const LmHeadLossShape shape{.N = M, .C = H, .V = V, .Vp = cfg_.padded_vocab(), .chunk = lm_head_chunk(N, V),
                                .rows = lm_head_rows(M, V)};
    // (Rows go in blocks of lm_head_rows(M), never more than the lm_head_rows(N) the scratch
    // was planned for.) With no masked row the one pass would write no word-embedding
    // gradient at all, so that case keeps the separate passes, whose backward writes zeros.
    // The word embedding's gradient may be bf16, written directly: its own mode. (The decoder
    // bias's, in a window zeroed as it opened, takes += as well as =.)
    const GradOut dword = grad_scale != nullptr ? grad_out(p_.word) : GradOut();
    float* dbias = grad_scale != nullptr ? grad_of(p_.mlm_bias) : nullptr;
    const bool accumulate = mode_for(dword, mode) == WeightGrad::Accumulate;
    const bool one_pass = grad_scale != nullptr && M > 0;
    if (one_pass && precision_ == Precision::Fp32) {
        lm_head_loss_train(gemm_, shape, acts_.mlm_losses, acts_.mlm_lse, acts_.dhead_a, dword, dbias,
                           accumulate, acts_.mlm_z, p_.word, p_.mlm_bias, acts_.mlm_targets, *grad_scale,
                           acts_.logits_chunk, acts_.logits_chunk, acts_.target_logit, acts_.mlm_max, soft);
    } else if (one_pass) {
        lm_head_loss_train(gemm_, shape, acts_.mlm_losses, acts_.mlm_lse, acts_.dhead_a, dword, dbias,
                           accumulate, acts_.mlm_z_h, half(p_.word), p_.mlm_bias, acts_.mlm_targets, *grad_scale,
                           acts_.logits_chunk, acts_.dlogits_chunk_h, acts_.target_logit, acts_.mlm_max, soft);
    } else if (precision_ == Precision::Fp32) {
        lm_head_loss_forward(gemm_, shape, acts_.mlm_losses, acts_.mlm_lse, acts_.mlm_z, p_.word, p_.mlm_bias,
                             acts_.mlm_targets, acts_.logits_chunk, acts_.target_logit, acts_.mlm_max);
    } else {
        lm_head_loss_forward(gemm_, shape, acts_.mlm_losses, acts_.mlm_lse, acts_.mlm_z_h, half(p_.word),
                             p_.mlm_bias, acts_.mlm_targets, acts_.logits_chunk, acts_.target_logit, acts_.mlm_max);
    }
    lap(one_pass ? "lm_head_loss_fwd_bwd" : "lm_head_loss_fwd");
    LossSum loss{.count = M};
    for (int64_t m = 0; m < M; m++) {
        loss.sum += acts_.mlm_losses[m];
        loss.correct += acts_.target_logit[m] >= acts_.mlm_max[m];
    }
    if (soft != nullptr && one_pass) loss.soft_sum = sum_soft_losses(*soft);
    if (grad_scale == nullptr) return loss;
    if (!one_pass) mlm_decoder_backward(dword, dbias, *grad_scale, accumulate);
    mlm_transform_backward(mode);
    return loss;
}

LossSum Bert::classify_head(const int32_t* labels) {
    const int64_t B = B_, T = T_, H = cfg_.hidden, L = cfg_.num_labels;
    // The pooler reads each sequence's first position ([CLS]). B rows: fp32 is cheap here.
    const float* h = hidden();
    for (int64_t b = 0; b < B; b++) std::copy_n(h + b * T * H, H, acts_.cls_in + b * H);
    linear_forward(gemm_, acts_.pooled, acts_.cls_in, p_.pooler_weight, p_.pooler_bias, B, H, H);
    if (cfg_.distil()) {
        relu_forward(acts_.pooled, acts_.pooled, B * H);
    } else {
        tanh_forward(acts_.pooled, acts_.pooled, B * H);
    }
    classifier_forward(acts_.class_logits, acts_.class_losses, acts_.pooled, p_.classifier_weight,
                       p_.classifier_bias, labels, B, H, L);
    lap("classifier_fwd");
    if (labels == nullptr) return {};
    return classification_losses(acts_.class_losses, acts_.class_logits, labels, B, L);
}

void Bert::mlm_decoder_backward(GradOut dword, float* dbias, float dloss, bool accumulate) {
    const int64_t M = mlm_rows_, H = cfg_.hidden, V = cfg_.vocab_size;
    const LmHeadLossShape shape{.N = M, .C = H, .V = V, .Vp = cfg_.padded_vocab(), .chunk = lm_head_chunk(B_ * T_, V)};
    float* dz = acts_.dhead_a;
    if (precision_ == Precision::Fp32) {
        lm_head_loss_backward(gemm_, shape, dz, dword, dbias, accumulate, acts_.mlm_z, p_.word, p_.mlm_bias,
                              acts_.mlm_lse, acts_.mlm_targets, dloss, acts_.logits_chunk, acts_.logits_chunk);
    } else {
        lm_head_loss_backward(gemm_, shape, dz, dword, dbias, accumulate, acts_.mlm_z_h, half(p_.word),
                              p_.mlm_bias, acts_.mlm_lse, acts_.mlm_targets, dloss, acts_.logits_chunk,
                              acts_.dlogits_chunk_h);
    }
    lap("lm_head_loss_bwd");
}

void Bert::mlm_transform_backward(WeightGrad mode) {
    const int64_t M = mlm_rows_, H = cfg_.hidden;
    const float* dz = acts_.dhead_a;  // the decoder's input gradient
    float* dg = acts_.dhead_b;
    zero(dg, M * H);
    layernorm_backward(dg, grad_of(p_.mlm_ln_weight), grad_of(p_.mlm_ln_bias), dz, acts_.mlm_g, p_.mlm_ln_weight,
                       acts_.mlm_mean,
                       acts_.mlm_rstd, M, H);
    gelu_erf_backward(acts_.dhead_a, dg, acts_.mlm_t, M * H);
    linear_backward(acts_.dhead_b, grad_of(p_.mlm_dense_weight), grad_of(p_.mlm_dense_bias), acts_.dhead_a,
                    acts_.mlm_in, acts_.mlm_in_h, p_.mlm_dense_weight, M, H, H, mode);
    for (int64_t m = 0; m < M; m++) {
        std::copy_n(acts_.dhead_b + m * H, H, acts_.dx + static_cast<int64_t>(acts_.mlm_rows[m]) * H);
    }
    lap("mlm_transform_bwd");
}

void Bert::classify_head_backward(const int32_t* labels, float dloss, WeightGrad mode) {
    const int64_t B = B_, T = T_, H = cfg_.hidden;
    const bool accumulate = mode == WeightGrad::Accumulate;
    classifier_backward(acts_.dhead_a, grad_of(p_.classifier_weight), grad_of(p_.classifier_bias), accumulate,
                        acts_.class_logits,
                        acts_.pooled, p_.classifier_weight, labels, dloss, B, H, cfg_.num_labels);
    if (cfg_.distil()) {
        relu_backward(acts_.dhead_b, acts_.dhead_a, acts_.pooled, B * H);
    } else {
        tanh_backward(acts_.dhead_b, acts_.dhead_a, acts_.pooled, B * H);
    }
    kernels::linear_backward(gemm_, acts_.dhead_a, grad_of(p_.pooler_weight), grad_of(p_.pooler_bias), acts_.dhead_b,
                             acts_.cls_in,
                             p_.pooler_weight, B, H, H, mode);
    for (int64_t b = 0; b < B; b++) std::copy_n(acts_.dhead_a + b * H, H, acts_.dx + b * T * H);
    // No tied decoder writes the word embedding's gradient first.
    const GradOut dword = grad_out(p_.word);
    if (mode_for(dword, mode) == WeightGrad::Overwrite) dword.zero(cfg_.padded_vocab() * H);
    lap("classifier_bwd");
}

void Bert::backward_body(WeightGrad mode) {
    // acts_.dx holds d(loss)/d(layer output); each layer turns it into d(loss)/d(layer input).
    for (int64_t l = cfg_.n_layer - 1; l >= 0; l--) {
        open_grads(layer_begin_[l], layer_begin_[l + 1]);
        const BertLayerParams dw = layer_grads(l);
        mlp_sublayer_backward(l, dw, mode);
        attention_sublayer_backward(l, dw, mode);
        grads_ready(layer_begin_[l], layer_begin_[l + 1]);
    }
    embeddings_backward();
}

// From acts_.dx = d(loss)/d(out) to acts_.dtmp = d(loss)/d(h1), through the MLP and its
// residual path.
void Bert::mlp_sublayer_backward(int64_t l, const BertLayerParams& dw, WeightGrad mode) {
    const int64_t N = B_ * T_, H = cfg_.hidden, I = cfg_.intermediate;
    const BertLayerParams& w = p_.layer[l];
    const BertLayerActs& a = acts_.layers[l];
    float *dres = acts_.dres, *dtmp = acts_.dtmp;
    zero(dres, N * H);
    layernorm_backward(dres, dw.out_ln_weight, dw.out_ln_bias, acts_.dx, a.res2, w.out_ln_weight, a.out_mean,
                       a.out_rstd, N, H);
    lap("layernorm_bwd");
    linear_backward(acts_.dgelu, dw.out_weight, dw.out_bias, dres, a.gelu, a.gelu_h, w.out_weight, N, I, H, mode);
    lap("matmul_bwd");
    if (precision_ == Precision::Fp32) {
        gelu_erf_backward(acts_.dinter, acts_.dgelu, a.inter, N * I);
    } else {
        gelu_erf_backward(acts_.dinter, acts_.dgelu, a.inter_h, N * I);
    }
    lap("gelu_bwd");
    linear_backward(dtmp, dw.inter_weight, dw.inter_bias, acts_.dinter, a.h1, a.h1_h, w.inter_weight, N, H, I, mode);
    lap("matmul_bwd");
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < N * H; i++) dtmp[i] += dres[i];  // the residual path to h1
}

// From acts_.dtmp = d(loss)/d(h1) to acts_.dx = d(loss)/d(x), the layer's input, through
// attention and its residual path.
void Bert::attention_sublayer_backward(int64_t l, const BertLayerParams& dw, WeightGrad mode) {
    const int64_t B = B_, T = T_, N = B * T, H = cfg_.hidden, NH = cfg_.n_head;
    const BertLayerParams& w = p_.layer[l];
    const BertLayerActs& a = acts_.layers[l];
    const float* x = l > 0 ? acts_.layers[l - 1].out : acts_.x0;
    const uint16_t* x_h = l > 0 ? acts_.layers[l - 1].out_h : acts_.x0_h;
    float *dx = acts_.dx, *dres = acts_.dres;
    zero(dres, N * H);
    layernorm_backward(dres, dw.attn_ln_weight, dw.attn_ln_bias, acts_.dtmp, a.res1, w.attn_ln_weight, a.h1_mean,
                       a.h1_rstd, N, H);
    lap("layernorm_bwd");
    linear_backward(acts_.datty, dw.attn_out_weight, dw.attn_out_bias, dres, a.atty, a.atty_h, w.attn_out_weight, N,
                    H, H, mode);
    lap("matmul_bwd");
    if (precision_ == Precision::Fp32) {
        attention_backward(acts_.dqkv, acts_.datty, a.atty, a.att_lse, a.qkv, B, T, H, NH, NH, attention_mask(),
                           attention_math());
    } else {
        attention_backward(acts_.dqkv, acts_.datty, a.atty, a.att_lse, a.qkv_h, B, T, H, NH, NH, attention_mask(),
                           attention_math());
    }
    lap("attention_bwd");
    linear_backward(dx, dw.qkv_weight, dw.qkv_bias, acts_.dqkv, x, x_h, w.qkv_weight, N, H, 3 * H, mode);
    lap("matmul_bwd");
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < N * H; i++) dx[i] += dres[i];  // the residual path to x
}

// From acts_.dx = d(loss)/d(x0) into the embeddings' gradients.
void Bert::embeddings_backward() {
    const int64_t N = B_ * T_, H = cfg_.hidden;
    float* dres = acts_.dres;
    open_grads(p_.position - params_.data(), layer_begin_.front());
    zero(dres, N * H);
    layernorm_backward(dres, grad_of(p_.emb_ln_weight), grad_of(p_.emb_ln_bias), acts_.dx, acts_.embedded,
                       p_.emb_ln_weight, acts_.x0_mean, acts_.x0_rstd, N, H);
    const GradOut dword = grad_out(p_.word);
    if (dword.f32 != nullptr) encoder_backward(dword.f32, grad_of(p_.position), dres, inputs_, B_, T_, H);
    if (dword.bf16 != nullptr) encoder_backward(dword.bf16, grad_of(p_.position), dres, inputs_, B_, T_, H);
    // All of type 0: row 0 gets the sums.
    if (p_.token_type != nullptr) bias_backward(grad_of(p_.token_type), dres, N, H);
    lap("embeddings_bwd");
    grads_ready(0, layer_begin_.front());
}

}  // namespace lmforge
