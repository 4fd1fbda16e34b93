// What every model (GPT-2, BERT) shares, and all that code outside a model touches: one flat
// parameter buffer and one gradient buffer laid out by a ParamLayout (so the optimizer, the
// gradient all-reduce and checkpoints are loops over flat memory), the bfloat16 copy of the
// parameters in mixed precision, gradients started by overwriting, profiling, the hook that
// overlaps gradient communication with backward — and sequence classification, the task every
// model here serves besides its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/matmul.h"

#include "core/aligned_buffer.h"
#include "core/profiler.h"
#include "model/param_layout.h"
#include "model/precision.h"

namespace lmforge {

class Model {
public:
    virtual ~Model() = default;
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    const ParamLayout& layout() const { return layout_; }
    std::span<float> params() { return params_.span(); }
    std::span<const float> params() const { return params_.span(); }
    std::span<float> grads() { return grads_.span(); }
    std::span<const float> grads() const { return grads_.span(); }
    Precision precision() const { return precision_; }

    // The architecture and shape as JSON, with "arch" ("gpt2" or "bert"): what a checkpoint
    // records so that it can be loaded without its training config.
    virtual std::string config_json() const = 0;

    // The model's own initialisation (GPT-2's or BERT's), deterministic in seed.
    virtual void init_weights(uint64_t seed) = 0;

    // Mixed precision keeps a bfloat16 copy of the parameters for the GEMMs. After writing
    // params() directly (loading, broadcasting), call weights_changed(): the next forward
    // refreshes the copy. An optimizer may instead refresh it as it updates, writing through
    // half_weights() (null in fp32).
    void weights_changed() { half_stale_ = true; }
    uint16_t* half_weights() { return params_h_.size() > 0 ? params_h_.data() : nullptr; }

    // Sizes activations for batches of B sequences of T tokens. Planning a smaller (B, T)
    // than before reuses the memory, so batches padded to their own longest sequence (dynamic
    // padding) cost no allocation.
    virtual void plan(int64_t B, int64_t T) = 0;
    virtual int64_t vocab_size() const = 0;

    // Sequence classification (num_labels() > 0). inputs (B, T) as planned, each sequence's
    // lengths[b] real tokens first and padding after; labels (B) in [0, num_labels), or null
    // for logits only. Returns the mean cross-entropy; backward() then follows it. Which
    // position is pooled is the model's: GPT-2 the last real token, BERT the first ([CLS]).
    virtual int64_t num_labels() const = 0;
    virtual float forward_classify(const int32_t* inputs, const int32_t* lengths, const int32_t* labels) = 0;
    virtual const float* class_logits() const = 0;  // (B, num_labels)

    // grads += d(loss_scale · loss)/dθ for the last forward with targets or labels.
    virtual void backward(float loss_scale = 1.0f) = 0;
    // A promise that backward(loss_scale) follows the next forward with targets, with no
    // other forward between: that forward may then compute part of the gradient with what it
    // has at hand. GPT-2's LM head and BERT's MLM decoder compute their gradients from each
    // block of logits there and skip recomputing them in backward (a quarter of the head's
    // work; classification heads ignore the promise). The next forward consumes it, whatever
    // its kind.
    void expect_backward(float loss_scale) { expected_loss_scale_ = loss_scale; }
    // Makes the next backward start the gradients from zero. It costs nothing now: that
    // backward overwrites the weight gradients where it would add to them (the bulk of the
    // buffer) and zeroes only the small rest, so the buffer is never swept twice.
    void zero_grad() { grads_stale_ = true; }

    // Times every kernel call into `profiler` (null: no timing).
    void set_profiler(Profiler* profiler) { profiler_ = profiler; }

    // Called by backward as ranges [begin, end) of the flat gradient buffer become final, from
    // the end of the buffer to its start. Empty: no calls. (For overlapping communication.)
    void set_grads_ready_hook(std::function<void(int64_t begin, int64_t end)> hook) { ready_hook_ = std::move(hook); }

protected:
    Model(ParamLayout layout, Precision precision);

    // At the start of a forward: the bfloat16 copy brought up to date if stale.
    void refresh_half_weights();
    // At the start of a backward: after zero_grad(), the gradients backward only adds to
    // (accumulated_grads_) are zeroed and the weight GEMMs told to overwrite theirs.
    kernels::WeightGrad begin_backward();
    static void zero(float* x, int64_t n) { std::fill_n(x, n, 0.0f); }
    // cfg after cfg.validate(): for constructors that derive the layout from it.
    template <class Config>
    static const Config& validated(const Config& cfg) {
        cfg.validate();
        return cfg;
    }
    const uint16_t* half(const float* param) const { return params_h_.data() + (param - params_.data()); }
    void lap(const char* name) {
        if (profiler_ != nullptr) profiler_->lap(name);
    }
    void grads_ready(int64_t begin, int64_t end) {
        if (ready_hook_) ready_hook_(begin, end);
    }

    ParamLayout layout_;
    Precision precision_;
    AlignedBuffer<float> params_, grads_;
    AlignedBuffer<uint16_t> params_h_;  // mixed precision: bfloat16 copy of params_
    bool half_stale_ = true;
    bool grads_stale_ = true;  // the next backward overwrites instead of adding
    std::optional<float> expected_loss_scale_;  // expect_backward's, until a forward takes it
    std::vector<std::span<float>> accumulated_grads_;  // gradients backward only adds to
    Profiler* profiler_ = nullptr;
    std::function<void(int64_t, int64_t)> ready_hook_;
};

}  // namespace lmforge
