// What every model (GPT-2, BERT) shares, and all that code outside a model touches: one flat
// parameter buffer and one gradient buffer laid out by a ParamLayout (so the optimizer, the
// gradient all-reduce and checkpoints are loops over flat memory), the bfloat16 copy of the
// parameters in mixed precision, profiling, the hook that overlaps gradient communication with
// backward, and the two calls every task makes: a training pass (forward and backward in one
// call, so no order of calls is left to remember) and an inference pass.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/profiler.h"
#include "kernels/attention.h"
#include "kernels/grad_out.h"
#include "kernels/matmul.h"
#include "model/batch.h"
#include "model/gradients.h"
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
    // The gradients in fp32 (empty where they are kept in bf16), or in bf16 (empty otherwise).
    std::span<float> grads() { return grads_.fp32(); }
    std::span<const float> grads() const { return grads_.fp32(); }
    std::span<uint16_t> grads_bf16() { return grads_.bf16(); }
    std::span<const uint16_t> grads_bf16() const { return grads_.bf16(); }
    bool grads_in_bf16() const { return grads_.in_bf16(); }
    // The floats the last backward rounded into bf16 gradients from its windows.
    int64_t grads_rounded() const { return grads_.rounded(); }
    // Keeps the gradients in bf16 from now on (model/gradients.h): half their memory. Needs
    // mixed precision, and a model that is not LoRA's (grad_window() > 0); InputError otherwise.
    void keep_grads_in_bf16();
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

    // Sizes activations for batches of up to B sequences of T tokens. A batch of another
    // shape plans itself; planning the largest first means no later, smaller one (a batch
    // padded to its own longest sequence) allocates.
    virtual void plan(int64_t B, int64_t T) = 0;
    virtual size_t activation_bytes() const = 0;  // of the largest plan so far
    virtual int64_t vocab_size() const = 0;
    // Classes of the sequence-classification head; 0: the model's language-model head.
    virtual int64_t num_labels() const = 0;

    // Training: one forward and backward pass over the batch, which has targets (a language-
    // model head) or labels (a classification head). The gradients of grad_scale · (the sum of
    // the batch's losses) are added to grads() (accumulate) or written over them. Returns the
    // losses. Where the head's gradients can be taken in the same pass as its logits (the LM
    // head's and the MLM decoder's one pass over blocks of rows), they are.
    virtual LossSum forward_backward(const Batch& batch, float grad_scale, bool accumulate) = 0;
    // Inference: the losses where the batch has targets or labels; without them, logits (the
    // model's own accessor) or class_logits().
    virtual LossSum forward(const Batch& batch) = 0;
    // The width of the final hidden states, and those of the last pass at `rows` (M of the
    // B·T positions) into out (M, width) in fp32: distillation's teacher hands them on.
    virtual int64_t width() const = 0;
    virtual void final_hidden_rows(const int32_t* rows, int64_t M, float* out) const = 0;
    // (B, num_labels) of the last pass of a classification head. Which position it pools is
    // the model's: GPT-2 the last real token, BERT the first ([CLS]).
    virtual const float* class_logits() const = 0;

    // Whether the parameters are adapters over a frozen base (LoRA): model.init_from then names
    // the base, which the model loads itself, and not these parameters.
    virtual bool adapters_only() const { return false; }
    // Memory by part: the frozen base (LoRA's; 0 otherwise), the trainable parameters (fp32,
    // and their bf16 copy in mixed precision), their gradients.
    virtual size_t frozen_bytes() const { return 0; }
    size_t weight_bytes() const { return params_.size() * sizeof(float) + params_h_.size() * sizeof(uint16_t); }
    size_t gradient_bytes() const { return grads_.bytes(); }
    // Floats of the gradients a step's first backward zeroes before adding into them
    // (begin_backward; in bf16 gradients, as the last backward's windows opened): for the
    // roofline's count of the bytes a step writes.
    int64_t zeroed_grad_floats() const {
        int64_t n = 0;
        for (const std::span<float> g : accumulated_grads_) n += static_cast<int64_t>(g.size());
        return n + grads_.zeroed();
    }

    // Times every kernel call into `profiler` (null: no timing).
    void set_profiler(Profiler* profiler) { profiler_ = profiler; }

    // Called by backward as ranges [begin, end) of the flat gradient buffer become final, from
    // the end of the buffer to its start. Empty: no calls. (For overlapping communication.)
    void set_grads_ready_hook(std::function<void(int64_t begin, int64_t end)> hook) { ready_hook_ = std::move(hook); }

protected:
    Model(ParamLayout layout, Precision precision);

    // At the start of a forward: the bfloat16 copy brought up to date if stale.
    void refresh_half_weights();
    // At the start of a backward: unless accumulating, the gradients backward only adds to
    // (accumulated_grads_) are zeroed, and the weight GEMMs are told to overwrite theirs. In
    // bf16 gradients every window starts afresh: the GEMMs always overwrite, and closing a
    // window adds (model/gradients.h).
    kernels::WeightGrad begin_backward(bool accumulate);
    // The mode for a gradient g that may be written in bf16 directly: there, whether this
    // backward accumulates; elsewhere, mode.
    kernels::WeightGrad mode_for(const kernels::GradOut& g, kernels::WeightGrad mode) const {
        if (g.bf16 == nullptr) return mode;
        return grads_.accumulating() ? kernels::WeightGrad::Accumulate : kernels::WeightGrad::Overwrite;
    }
    // Where backward writes param's gradient (a pointer into params()): the fp32 buffer, or the
    // open window in bf16 gradients.
    float* grad_of(const float* param) { return grads_.at(param - params_.data()); }
    // Where a kernel that writes bf16 directly writes param's gradient: grad_of's fp32 in fp32
    // gradients; in bf16 ones, the bf16 buffer (and room for a block of fp32 sums).
    kernels::GradOut grad_out(const float* param) {
        return grads_.in_bf16() ? grads_.bf16_at(param - params_.data()) : kernels::GradOut(grad_of(param));
    }
    // Backward is about to write the gradients of [begin, end) (a no-op in fp32 gradients).
    void open_grads(int64_t begin, int64_t end) { grads_.open(begin, end); }
    // The floats of the largest range backward opens; 0: this model keeps fp32 gradients only.
    virtual int64_t grad_window() const { return 0; }
    static void zero(float* x, int64_t n) { std::fill_n(x, n, 0.0f); }
    // Error unless the batch's vectors have the sizes its (B, T) says (an internal error: tasks
    // build batches).
    static void check_shape(const Batch& batch);
    // The LossSum of a classifier's B rows: per-row losses (B), logits (B, L), labels (B); a
    // row is correct where its label's logit is the first highest.
    static LossSum classification_losses(const float* losses, const float* logits, const int32_t* labels, int64_t B,
                                         int64_t L);
    // Error unless soft targets (null: none) cover exactly the head's `rows` (an internal
    // error: the distillation task builds them for the batch's counted targets).
    static void check_soft_targets(const kernels::SoftTargets* soft, int64_t rows);
    // Σ of the soft term the head wrote for each of its rows.
    static double sum_soft_losses(const kernels::SoftTargets& soft);
    // Distillation's hidden-state term at the head's M rows (soft->hidden not null): adds
    // grad_scale · cosine_weight · ∂(1 − cos)/∂h into dh (·, C) at those rows of the final
    // hidden states h (fp32, or h_half where only bf16 is kept); returns Σ (1 − cos).
    static double hidden_term(const kernels::SoftTargets& soft, float grad_scale, const int32_t* rows, int64_t M,
                              float* dh, const float* h, const uint16_t* h_half, int64_t C);
    // cfg after cfg.validate(): for constructors that derive the layout from it.
    template <class Config>
    static const Config& validated(const Config& cfg) {
        cfg.validate();
        return cfg;
    }
    const uint16_t* half(const float* param) const { return params_h_.data() + (param - params_.data()); }
    // Attention's products in the GEMMs' precision (kernels/attention.h).
    kernels::AttentionMath attention_math() const {
        return precision_ == Precision::Bf16 ? kernels::AttentionMath::Bf16 : kernels::AttentionMath::Fp32;
    }
    void lap(const char* name) {
        if (profiler_ != nullptr) profiler_->lap(name);
    }
    // [begin, end) of the gradients is final: what of it lies in the open window is rounded
    // into the bf16 buffer, and the hook is told.
    void grads_ready(int64_t begin, int64_t end) {
        if (grads_.in_bf16()) {
            grads_.close(begin, end);
            lap("grads_to_bf16");
        }
        if (ready_hook_) ready_hook_(begin, end);
    }

    ParamLayout layout_;
    Precision precision_;
    AlignedBuffer<float> params_;
    Gradients grads_;
    AlignedBuffer<uint16_t> params_h_;  // mixed precision: bfloat16 copy of params_
    bool half_stale_ = true;
    std::vector<std::span<float>> accumulated_grads_;  // gradients backward only adds to
    Profiler* profiler_ = nullptr;
    std::function<void(int64_t, int64_t)> ready_hook_;
};

}  // namespace lmforge
