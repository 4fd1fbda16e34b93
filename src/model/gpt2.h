// GPT-2 (https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf):
// parameters and gradients in flat buffers, activations planned for one (B, T), and the
// forward and backward passes as calls to the kernels. No autograd: backward is written out.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "backend/gemm.h"
#include "core/aligned_buffer.h"
#include "core/arena.h"
#include "core/profiler.h"
#include "model/gpt2_acts.h"
#include "model/gpt2_config.h"
#include "model/gpt2_params.h"
#include "model/param_layout.h"

namespace lmforge {

class Gpt2 {
public:
    // Validates cfg (InputError). Parameters start at zero; call init_weights or load them.
    Gpt2(const Gpt2Config& cfg, backend::Gemm& gemm);

    const Gpt2Config& config() const { return cfg_; }
    const ParamLayout& layout() const { return layout_; }
    std::span<float> params() { return params_.span(); }
    std::span<const float> params() const { return params_.span(); }
    std::span<float> grads() { return grads_.span(); }
    std::span<const float> grads() const { return grads_.span(); }

    void init_weights(uint64_t seed);
    const Gpt2Params& weights() const { return p_; }  // typed views of params()

    // Sizes activations for batches of B sequences of T tokens (T <= block_size).
    void plan(int64_t B, int64_t T);
    int64_t batch() const { return B_; }
    int64_t seq_len() const { return T_; }
    size_t activation_bytes() const { return arena_.capacity(); }

    // inputs, targets: (B, T). Token ids must lie in [0, vocab_size); targets may also be
    // kIgnoreIndex (-100), or targets null for logits only. Returns the mean loss over counted
    // targets (0 when there are none). Throws InputError for an id out of range.
    float forward(const int32_t* inputs, const int32_t* targets);
    // (B, T, Vp) from the last forward; overwritten by backward.
    const float* logits() const { return acts_.logits; }

    // grads += d(loss_scale · loss)/dθ for the last forward (which needs targets).
    void backward(float loss_scale = 1.0f);
    // Makes the next backward start the gradients from zero. It costs nothing now: that
    // backward overwrites the weight gradients where it would add to them (the bulk of the
    // buffer) and zeroes only the small rest, so the buffer is never swept twice.
    void zero_grad() { grads_stale_ = true; }

    // Times every kernel call into `profiler` (null: no timing).
    void set_profiler(Profiler* profiler) { profiler_ = profiler; }

    // Called by backward as ranges [begin, end) of the flat gradient buffer become final:
    // ln_f's first, then each block from the last to the first, then the embeddings — from
    // the end of the buffer to its start. Empty: no calls. (For overlapping communication.)
    void set_grads_ready_hook(std::function<void(int64_t begin, int64_t end)> hook) { ready_hook_ = std::move(hook); }

private:
    void lap(const char* name) {
        if (profiler_ != nullptr) profiler_->lap(name);
    }
    void check_tokens(const int32_t* ids, bool allow_ignore, const char* what) const;

    Gpt2Config cfg_;
    backend::Gemm& gemm_;
    ParamLayout layout_;
    AlignedBuffer<float> params_, grads_;
    Gpt2Params p_, g_;  // views of params_ and grads_
    Arena arena_;
    Gpt2Acts acts_;
    int64_t B_ = 0, T_ = 0;
    const int32_t* inputs_ = nullptr;   // of the last forward, for backward
    const int32_t* targets_ = nullptr;
    int64_t counted_ = 0;  // targets that are not ignored, in the last forward
    bool grads_stale_ = true;  // the next backward overwrites instead of adding
    // Gradients backward only ever adds to (biases, LayerNorm, wpe): zeroed when stale.
    std::vector<std::span<float>> accumulated_grads_;
    Profiler* profiler_ = nullptr;
    std::function<void(int64_t, int64_t)> ready_hook_;
    std::vector<int64_t> block_begin_;  // offset of each block's first tensor; then ln_f's
};

}  // namespace lmforge
