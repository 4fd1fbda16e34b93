// What a model reads and learns from: B sequences of T token ids, with, for training and
// evaluation, the tokens to predict (language modelling, masked LM, instruction tuning) or each
// sequence's class (classification); and what a pass over one returns, summed so that micro-
// batches and processes add up to the mean over the global batch.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/crossentropy.h"
#include "kernels/soft_targets.h"

namespace lmforge {

struct Batch {
    int64_t B = 0, T = 0;
    std::vector<int32_t> inputs{};   // (B, T)
    std::vector<int32_t> lengths{};  // (B): real tokens first in each row, padding after; empty: T each
    std::vector<int32_t> targets{};  // (B, T): the token to predict, or kIgnoreIndex; empty: none
    std::vector<int32_t> labels{};   // (B): each sequence's class; empty: none
    // Distillation: the teacher's soft targets for the counted targets in row-major order
    // (soft_targets->rows of them); null: none. Owned by the task that sets it.
    const kernels::SoftTargets* soft_targets = nullptr;
    // The optimizer step the batch trains: the key of the noise a training pass draws (LoRA's
    // dropout masks), so that a resumed run draws what the uninterrupted one did.
    int64_t step = 0;

    // Sizes the batch for (B, T) with inputs and targets of that size, no lengths or labels.
    void resize_for_tokens(int64_t batch, int64_t seq) {
        B = batch;
        T = seq;
        inputs.resize(static_cast<size_t>(B * T));
        targets.resize(static_cast<size_t>(B * T));
        lengths.clear();
        labels.clear();
        soft_targets = nullptr;
    }
    // What the losses are counted over: the labels, else the targets that are not ignored.
    int64_t counted() const {
        if (!labels.empty()) return static_cast<int64_t>(labels.size());
        int64_t n = 0;
        for (const int32_t t : targets) n += t != kernels::kIgnoreIndex;
        return n;
    }
};

// A forward pass's losses: their sum over `count` targets (or labels), and how many of those
// the model ranked first (greedy decoding would produce them; the class it would choose). With
// soft targets, soft_sum is the sum of the soft term (T² · KL to the teacher) over the same,
// and cosine_sum that of the hidden-state term (1 − cos).
struct LossSum {
    double sum = 0;
    int64_t count = 0;
    int64_t correct = 0;
    double soft_sum = 0;
    double cosine_sum = 0;

    LossSum& operator+=(const LossSum& o) {
        sum += o.sum;
        count += o.count;
        correct += o.correct;
        soft_sum += o.soft_sum;
        cosine_sum += o.cosine_sum;
        return *this;
    }
    double soft_mean() const { return count > 0 ? soft_sum / static_cast<double>(count) : 0.0; }
    double cosine_mean() const { return count > 0 ? cosine_sum / static_cast<double>(count) : 0.0; }
    double mean() const { return count > 0 ? sum / static_cast<double>(count) : 0.0; }
    double accuracy() const { return count > 0 ? static_cast<double>(correct) / static_cast<double>(count) : 0.0; }
};

}  // namespace lmforge
