#include "model/model.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

#include "kernels/bf16.h"
#include "kernels/cosine_distance.h"

namespace lmforge {

Model::Model(ParamLayout layout, Precision precision)
    : layout_(std::move(layout)), precision_(precision), params_(layout_.total()), grads_(layout_.total()) {
    if (precision_ == Precision::Bf16) params_h_ = AlignedBuffer<uint16_t>(layout_.total());
}

void Model::refresh_half_weights() {
    if (precision_ == Precision::Bf16 && half_stale_) {
        kernels::to_bf16(params_h_.data(), params_.data(), static_cast<int64_t>(params_.size()));
        half_stale_ = false;
    }
}

void Model::check_soft_targets(const kernels::SoftTargets* soft, int64_t rows) {
    if (soft != nullptr && soft->rows != rows) {
        throw Error(fmt::format("soft targets for {} rows, but the head has {}", soft->rows, rows));
    }
}

double Model::sum_soft_losses(const kernels::SoftTargets& soft) {
    double sum = 0;
    for (int64_t n = 0; n < soft.rows; n++) sum += soft.kl[n];
    return sum;
}

double Model::hidden_term(const kernels::SoftTargets& soft, float grad_scale, const int32_t* rows, int64_t M,
                          float* dh, const float* h, const uint16_t* h_half, int64_t C) {
    const float scale = grad_scale * soft.cosine_weight;
    if (h != nullptr) {
        kernels::cosine_distance_backward(dh, soft.cosine, h, soft.hidden, rows, M, C, scale);
    } else {
        kernels::cosine_distance_backward(dh, soft.cosine, h_half, soft.hidden, rows, M, C, scale);
    }
    double sum = 0;
    for (int64_t m = 0; m < M; m++) sum += soft.cosine[m];
    return sum;
}

kernels::WeightGrad Model::begin_backward(bool accumulate) {
    if (grads_.in_bf16()) {
        grads_.begin(accumulate);
        return kernels::WeightGrad::Overwrite;
    }
    if (accumulate) return kernels::WeightGrad::Accumulate;
    for (std::span<float> g : accumulated_grads_) zero(g.data(), static_cast<int64_t>(g.size()));
    return kernels::WeightGrad::Overwrite;
}

void Model::keep_grads_in_bf16() {
    if (grads_.in_bf16()) return;
    if (precision_ != Precision::Bf16) {
        throw InputError("bf16 gradients need mixed precision", "set train.precision to bf16 or train.grads to fp32");
    }
    if (grad_window() <= 0) {
        throw InputError(adapters_only() ? "LoRA keeps its adapters' gradients in fp32: they take a few MiB"
                                         : "this model keeps its gradients in fp32 only",
                         "set train.grads to fp32");
    }
    // What backward adds into rather than writes, and what no kernel writes (a tensor's padding,
    // the gaps the layout's alignment leaves between tensors): zeroed as each window opens over it.
    std::vector<std::pair<int64_t, int64_t>> zeroed;
    const float* base = grads_.fp32().data();
    for (const std::span<float> g : accumulated_grads_) {
        zeroed.emplace_back(g.data() - base, static_cast<int64_t>(g.size()));
    }
    int64_t end = 0;  // of the tensors so far, in layout order
    for (const ParamSpec& s : layout_.specs()) {
        if (s.offset > end) zeroed.emplace_back(end, s.offset - end);
        if (s.reserved > s.numel) zeroed.emplace_back(s.offset + s.numel, s.reserved - s.numel);
        end = s.offset + s.reserved;
    }
    if (layout_.total() > end) zeroed.emplace_back(end, layout_.total() - end);
    accumulated_grads_.clear();  // they pointed into the fp32 buffer
    grads_.keep_in_bf16(grad_window(), std::move(zeroed));
}

void Model::check_shape(const Batch& b) {
    const auto n = static_cast<size_t>(b.B * b.T), rows = static_cast<size_t>(b.B);
    const bool ok = b.inputs.size() == n && (b.targets.empty() || b.targets.size() == n) &&
                    (b.lengths.empty() || b.lengths.size() == rows) && (b.labels.empty() || b.labels.size() == rows);
    if (!ok) {
        throw Error(fmt::format("a batch of ({}, {}) with {} inputs, {} targets, {} lengths, {} labels", b.B, b.T,
                                b.inputs.size(), b.targets.size(), b.lengths.size(), b.labels.size()));
    }
}

LossSum Model::classification_losses(const float* losses, const float* logits, const int32_t* labels, int64_t B,
                                     int64_t L) {
    LossSum sum{.count = B};
    for (int64_t b = 0; b < B; b++) {
        const float* row = logits + b * L;
        sum.sum += losses[b];
        sum.correct += std::max_element(row, row + L) - row == labels[b];
    }
    return sum;
}

}  // namespace lmforge
