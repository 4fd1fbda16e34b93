#include "model/causal_lm.h"

#include <algorithm>
#include <type_traits>

#include <fmt/format.h>

#include "core/bf16.h"
#include "core/error.h"
#include "kernels/classifier.h"

namespace lmforge {

using namespace kernels;

namespace {

// Calls fn(numel, slot) for every buffer of the heads (numel 0 leaves it null).
template <class Fn>
void visit_head_acts(const HeadDims& d, int64_t B, int64_t T, Precision precision, bool row_block, HeadActs& a,
                     Fn&& fn) {
    const int64_t N = B * T, C = d.C, L = d.L;
    const int64_t h = precision == Precision::Bf16 ? 1 : 0, f = 1 - h;
    // One vocabulary chunk of all rows (forward, backward, a frozen head's training), and one
    // block of rows with all the vocabulary if training takes the one pass (lm_head_loss.h).
    const int64_t scratch = L > 0 ? 0 : lm_head_scratch(N, d.V, row_block);
    const int64_t lm = L > 0 ? 0 : 1;
    fn(scratch, a.logits_chunk);
    fn(N, a.losses);
    fn(N, a.lse);
    fn(N, a.target_logit);
    fn(N, a.row_max);
    fn(lm * N, a.head_rows);
    fn(lm * N, a.head_targets);
    fn(lm * f * N * C, a.head_x);
    fn(lm * h * N * C, a.head_x_h);
    fn(lm * N, a.head_losses);
    fn(lm * N, a.head_target_logit);
    fn(lm * N, a.head_row_max);
    fn(lm * N * C, a.head_dx);
    fn(L > 0 ? B * C : 0, a.pooled);
    fn(L > 0 ? B * C : 0, a.pooled_grad);
    fn(B * L, a.class_logits);
    fn(L > 0 ? B : 0, a.class_losses);
    fn(h * (L > 0 ? 0 : lm_head_dlogits_scratch(N, d.V, row_block, false)), a.dlogits_chunk_h);
}

}  // namespace

size_t causal_head_bytes(const HeadDims& d, int64_t B, int64_t T, Precision precision, bool row_block) {
    HeadActs acts;
    size_t bytes = 0;
    visit_head_acts(d, B, T, precision, row_block, acts, [&](int64_t n, auto*& slot) {
        bytes += n > 0 ? Arena::bytes_for(n * sizeof(*slot)) : 0;
    });
    return bytes;
}

CausalLm::CausalLm(ParamLayout layout, Precision precision, backend::Gemm& gemm, HeadDims dims)
    : Model(std::move(layout), precision), gemm_(gemm), dims_(dims) {}

void CausalLm::plan(int64_t B, int64_t T) {
    if (B <= 0) throw InputError(fmt::format("batch size B = {} must be positive", B));
    if (T <= 0 || T > context_length()) {
        throw InputError(
            fmt::format("sequence length T = {} must lie in 1..block_size = {}", T, context_length()),
            "shorten the sequence or raise block_size");
    }
    if (B == B_ && T == T_) return;
    plan_body(B, T);
    // Training's one pass needs a block of rows with all their logits; a frozen head streams.
    const bool row_block = lm_head_one_pass(gemm_, precision_ == Precision::Bf16) && !head_frozen();
    const size_t bytes = causal_head_bytes(dims_, B, T, precision_, row_block);
    head_arena_.replan(bytes);
    head_ = {};
    visit_head_acts(dims_, B, T, precision_, row_block, head_, [&](int64_t n, auto*& slot) {
        using T_ = std::remove_reference_t<decltype(*slot)>;
        slot = n > 0 ? head_arena_.alloc<T_>(n) : nullptr;
    });
    pooled_rows_.assign(B, 0);
    B_ = B;
    T_ = T;
}

void CausalLm::check_tokens(const int32_t* ids, bool allow_ignore, const char* what) const {
    for (int64_t i = 0; i < B_ * T_; i++) {
        const int32_t id = ids[i];
        if ((id < 0 || id >= dims_.V) && !(allow_ignore && id == kIgnoreIndex)) {
            throw InputError(fmt::format("{} token id {} at batch row {}, position {} is outside "
                                         "the vocabulary [0, {})",
                                         what, id, i / T_, i % T_, dims_.V),
                             "the data was tokenized with a larger vocabulary than the model's");
        }
    }
}

void CausalLm::forward_start(const Batch& batch) {
    check_shape(batch);
    plan(batch.B, batch.T);
    check_tokens(batch.inputs.data(), false, "input");
    if (dims_.L > 0) {
        if (static_cast<int64_t>(batch.lengths.size()) != B_) throw Error("a classification batch needs lengths");
        for (int64_t b = 0; b < B_; b++) {
            if (batch.lengths[b] < 1 || batch.lengths[b] > T_) {
                throw InputError(fmt::format("sequence {} has length {}, outside 1..{}", b, batch.lengths[b], T_));
            }
        }
        for (size_t b = 0; b < batch.labels.size(); b++) {
            if (batch.labels[b] < 0 || batch.labels[b] >= dims_.L) {
                throw InputError(
                    fmt::format("label {} of sequence {} is outside 0..{}", batch.labels[b], b, dims_.L - 1),
                    "labels are class indices below model.num_labels");
            }
        }
    } else if (!batch.targets.empty()) {
        check_tokens(batch.targets.data(), true, "target");
    }
    if (profiler_ != nullptr) profiler_->start();
    refresh_half_weights();
    forward_body(batch.inputs.data());
    inputs_ = batch.inputs.data();
}

LossSum CausalLm::forward_backward(const Batch& batch, float grad_scale, bool accumulate) {
    const bool classify = dims_.L > 0;
    if (classify ? batch.labels.empty() : batch.targets.empty()) {
        throw Error(fmt::format("forward_backward needs {}", classify ? "labels" : "targets"));
    }
    training_ = true;
    step_ = batch.step;
    forward_start(batch);
    const WeightGrad mode = begin_backward(accumulate);
    open_head_grads();
    LossSum loss;
    if (classify) {
        loss = classify_head(batch.lengths.data(), batch.labels.data());
        classify_head_backward(batch.labels.data(), grad_scale, mode);
    } else {
        loss = lm_head(batch.targets.data(), &grad_scale, mode, batch.soft_targets);
        const kernels::SoftTargets* soft = batch.soft_targets;
        if (soft != nullptr && soft->hidden != nullptr) {  // d(final hidden) of the counted rows
            const HeadIo io = head_io();
            loss.cosine_sum = hidden_term(*soft, grad_scale, head_.head_rows, loss.count, io.dx, io.x, io.x_h, dims_.C);
        }
    }
    backward_body(mode);
    return loss;
}

LossSum CausalLm::forward(const Batch& batch) {
    training_ = false;
    forward_start(batch);
    if (dims_.L > 0) return classify_head(batch.lengths.data(), batch.labels.empty() ? nullptr : batch.labels.data());
    if (!batch.targets.empty()) return lm_head(batch.targets.data(), nullptr, WeightGrad::Overwrite);
    all_logits();
    return {};
}

void CausalLm::all_logits() {
    // The full (N, Vp) = x · Wᵀ, in a buffer that training never allocates.
    const int64_t N = B_ * T_, Vp = dims_.Vp;
    if (logits_.size() != static_cast<size_t>(N * Vp)) logits_ = AlignedBuffer<float>(N * Vp);
    const HeadIo io = head_io();
    const backend::GemmShape shape{.M = N, .N = Vp, .K = dims_.C, .trans_b = true};
    if (precision_ == Precision::Fp32) {
        gemm_.run(shape, io.x, io.w, logits_.data());
    } else {
        gemm_.run_bf16(shape, io.x_h, io.w_h, logits_.data());
    }
    lap("lm_head_fwd");
}

void CausalLm::final_hidden_rows(const int32_t* rows, int64_t M, float* out) const {
    const int64_t C = dims_.C;
    const HeadIo io = head_io();
    for (int64_t m = 0; m < M; m++) {
        const int64_t row = rows[m];
        if (io.x != nullptr) {
            std::copy_n(io.x + row * C, C, out + m * C);
        } else {
            for (int64_t c = 0; c < C; c++) out[m * C + c] = from_bf16(io.x_h[row * C + c]);
        }
    }
}

kernels::LmHeadLossShape CausalLm::lm_head_shape(int64_t rows) const {
    // The chunk and block of the planned rows, which the scratch is sized for (rows <= B·T).
    return {.N = rows, .C = dims_.C, .V = dims_.V, .Vp = dims_.Vp, .chunk = lm_head_chunk(B_ * T_, dims_.V),
            .rows = lm_head_rows(B_ * T_, dims_.V)};
}

int64_t CausalLm::gather_head_rows(const int32_t* targets) {
    // Only positions with a target reach the LM head. When some are ignored (instruction
    // tuning's prompts), their rows are gathered first, so the head's cost follows the targets.
    const int64_t N = B_ * T_, C = dims_.C;
    const HeadIo io = head_io();
    int64_t M = 0;
    for (int64_t i = 0; i < N; i++) {
        if (targets[i] == kIgnoreIndex) continue;
        head_.head_rows[M] = static_cast<int32_t>(i);
        head_.head_targets[M++] = targets[i];
    }
    head_gathered_ = M < N;
    for (int64_t m = 0; head_gathered_ && m < M; m++) {
        const int64_t row = head_.head_rows[m];
        if (precision_ == Precision::Fp32) std::copy_n(io.x + row * C, C, head_.head_x + m * C);
        if (precision_ == Precision::Bf16) std::copy_n(io.x_h + row * C, C, head_.head_x_h + m * C);
    }
    return M;
}

CausalLm::HeadRows CausalLm::head_rows(const int32_t* targets) const {
    if (head_gathered_) {
        return {head_.head_x,      head_.head_x_h,          head_.head_targets, head_.head_losses,
                head_.head_target_logit, head_.head_row_max, head_.head_dx};
    }
    const HeadIo io = head_io();
    return {io.x, io.x_h, targets, head_.losses, head_.target_logit, head_.row_max, io.dx};
}

LossSum CausalLm::lm_head(const int32_t* targets, const float* grad_scale, WeightGrad mode, const SoftTargets* soft) {
    const int64_t N = B_ * T_, C = dims_.C;
    const int64_t M = gather_head_rows(targets);
    check_soft_targets(soft, M);
    // A frozen head's scratch holds one vocabulary chunk (it streams); a soft term needs whole rows.
    if (soft != nullptr && grad_scale != nullptr && head_frozen()) {
        throw Error("a frozen LM head takes no soft targets");
    }
    std::fill_n(head_.losses, N, 0.0f);
    if (M == 0) {  // nothing to learn from: no gradient reaches the body
        if (grad_scale != nullptr) zero(head_io().dx, N * C);
        if (grad_scale != nullptr && mode_for(head_grads().dw, mode) == WeightGrad::Overwrite) head_matrix_untouched();
        return {};
    }
    const HeadRows r = head_rows(targets);
    run_lm_head(r, M, grad_scale, mode, soft);
    lap(grad_scale != nullptr ? "lm_head_loss_fwd_bwd" : "lm_head_loss_fwd");
    LossSum loss = sum_head_losses(r, M);
    if (soft != nullptr && grad_scale != nullptr) loss.soft_sum = sum_soft_losses(*soft);
    if (head_gathered_) scatter_head_rows(r, M, grad_scale != nullptr);
    return loss;
}

void CausalLm::run_lm_head(const HeadRows& r, int64_t M, const float* grad_scale, WeightGrad mode,
                           const SoftTargets* soft) {
    const HeadIo io = head_io();
    const GradOut dw = grad_scale != nullptr ? head_grads().dw : GradOut();
    const bool accumulate = mode_for(dw, mode) == WeightGrad::Accumulate;
    if (grad_scale != nullptr && precision_ == Precision::Fp32) {
        lm_head_loss_train(gemm_, lm_head_shape(M), r.losses, head_.lse, r.dx, dw, nullptr, accumulate, r.x, io.w,
                           nullptr, r.targets, *grad_scale, head_.logits_chunk, head_.logits_chunk, r.target_logit,
                           r.row_max, soft);
    } else if (grad_scale != nullptr) {
        lm_head_loss_train(gemm_, lm_head_shape(M), r.losses, head_.lse, r.dx, dw, nullptr, accumulate, r.x_h,
                           io.w_h, nullptr, r.targets, *grad_scale, head_.logits_chunk, head_.dlogits_chunk_h,
                           r.target_logit, r.row_max, soft);
    } else if (precision_ == Precision::Fp32) {
        lm_head_loss_forward(gemm_, lm_head_shape(M), r.losses, head_.lse, r.x, io.w, nullptr, r.targets,
                             head_.logits_chunk, r.target_logit, r.row_max);
    } else {
        lm_head_loss_forward(gemm_, lm_head_shape(M), r.losses, head_.lse, r.x_h, io.w_h, nullptr, r.targets,
                             head_.logits_chunk, r.target_logit, r.row_max);
    }
}

LossSum CausalLm::sum_head_losses(const HeadRows& rows, int64_t M) const {
    LossSum loss{.count = M};
    for (int64_t m = 0; m < M; m++) {
        loss.sum += rows.losses[m];
        loss.correct += rows.target_logit[m] >= rows.row_max[m];
    }
    return loss;
}

void CausalLm::scatter_head_rows(const HeadRows& r, int64_t M, bool with_grad) {
    // token_losses() and target_is_top() index by position.
    for (int64_t m = 0; m < M; m++) {
        const int64_t row = head_.head_rows[m];
        head_.losses[row] = r.losses[m];
        head_.target_logit[row] = r.target_logit[m];
        head_.row_max[row] = r.row_max[m];
    }
    if (!with_grad) return;
    const int64_t C = dims_.C;
    float* dx = head_io().dx;
    zero(dx, B_ * T_ * C);
    for (int64_t m = 0; m < M; m++) std::copy_n(head_.head_dx + m * C, C, dx + head_.head_rows[m] * C);
}

LossSum CausalLm::classify_head(const int32_t* lengths, const int32_t* labels) {
    const int64_t B = B_, T = T_, C = dims_.C, L = dims_.L;
    const HeadIo io = head_io();
    // Pool: each sequence's hidden state at its last real position (after the final norm), in fp32.
    for (int64_t b = 0; b < B; b++) {
        const int64_t row = b * T + lengths[b] - 1;
        float* h = head_.pooled + b * C;
        if (precision_ == Precision::Fp32) {
            std::copy_n(io.x + row * C, C, h);
        } else {
            for (int64_t c = 0; c < C; c++) h[c] = from_bf16(io.x_h[row * C + c]);
        }
        pooled_rows_[b] = row;
    }
    classifier_forward(head_.class_logits, head_.class_losses, head_.pooled, io.score, nullptr, labels, B, C, L);
    lap("classifier_fwd");
    if (labels == nullptr) return {};
    return classification_losses(head_.class_losses, head_.class_logits, labels, B, L);
}

void CausalLm::classify_head_backward(const int32_t* labels, float dloss, WeightGrad mode) {
    const int64_t N = B_ * T_, C = dims_.C;
    const HeadIo io = head_io();
    const HeadGrads grads = head_grads();
    const bool accumulate = mode == WeightGrad::Accumulate;
    classifier_backward(head_.pooled_grad, grads.dscore, nullptr, accumulate, head_.class_logits, head_.pooled,
                        io.score, labels, dloss, B_, C, dims_.L);
    // Only the pooled rows reach the head: d(final hidden) is zero elsewhere.
    zero(io.dx, N * C);
    for (int64_t b = 0; b < B_; b++) std::copy_n(head_.pooled_grad + b * C, C, io.dx + pooled_rows_[b] * C);
    if (mode_for(grads.dw, mode) == WeightGrad::Overwrite) head_matrix_untouched();
    lap("classifier_bwd");
}

}  // namespace lmforge
