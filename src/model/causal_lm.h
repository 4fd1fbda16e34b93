// What every decoder-only language model (GPT-2, Llama) adds to Model: the two heads on its
// final hidden states, written once for all of them. The LM head (the embedding matrix, tied,
// or a separate one) takes the rows with a target, gathered where some are ignored, in one pass
// over blocks of rows; the classification head reads each sequence's last real token. A model
// supplies its body (embeddings, blocks, final norm) and says where its final hidden states and
// head weights are; generation goes through its Decoder (a KV cache).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/gemm.h"
#include "core/aligned_buffer.h"
#include "core/arena.h"
#include "kernels/lm_head_loss.h"
#include "model/model.h"

namespace lmforge {

// Generation with a KV cache: tokens go in one at a time and each layer keeps the keys and
// values of every position so far, so a new token costs attention over the cache, O(T), rather
// than a forward pass over the whole sequence. One sequence.
class Decoder {
public:
    virtual ~Decoder() = default;
    virtual void reset() = 0;
    virtual int64_t position() const = 0;
    virtual int64_t capacity() const = 0;  // positions the cache holds
    virtual int64_t vocab_size() const = 0;
    // Feeds `token` at the next position; returns the logits for the token after it: at least
    // vocab_size() floats, the first vocab_size() meaningful. InputError when the cache is full
    // or the id is bad.
    virtual const float* step(int32_t token) = 0;
};

// The head's scratch and outputs for one (B, T): carved from the head's own arena.
struct HeadActs {
    float* logits_chunk = nullptr;  // the LM head's logits: (N, chunk) or (rows, V) (lm_head_loss.h)
    float* losses = nullptr;        // (N)
    float* lse = nullptr;           // (N)
    float* target_logit = nullptr;  // (N) each target's logit
    float* row_max = nullptr;       // (N) each position's highest logit
    // When only some positions have targets (instruction tuning: the response's), the LM head
    // runs on those rows alone, gathered: the rows (M <= N), their inputs (fp32 or bf16),
    // targets, losses, target logits and highest logits, and the gradient of their inputs.
    int32_t *head_rows = nullptr, *head_targets = nullptr;
    float* head_x = nullptr;
    uint16_t* head_x_h = nullptr;
    float *head_losses = nullptr, *head_target_logit = nullptr, *head_row_max = nullptr, *head_dx = nullptr;
    // Sequence classification (num_labels > 0; null otherwise): pooled hidden states (B, C),
    // their gradient (B, C), the head's logits (B, L) and losses (B).
    float *pooled = nullptr, *pooled_grad = nullptr, *class_logits = nullptr, *class_losses = nullptr;
    uint16_t* dlogits_chunk_h = nullptr;  // mixed precision: the bf16 dlogits of one chunk
};

// The sizes the heads work with: width C, vocabulary V padded to Vp rows of the head matrix,
// L classes (0: the LM head).
struct HeadDims {
    int64_t C = 0, V = 0, Vp = 0, L = 0;
};

// The bytes a model's heads plan for (B, T); row_block: with the scratch of training's one pass
// (kernels::lm_head_scratch).
size_t causal_head_bytes(const HeadDims& d, int64_t B, int64_t T, Precision precision, bool row_block);

class CausalLm : public Model {
public:
    int64_t vocab_size() const override { return dims_.V; }
    int64_t padded_vocab() const { return dims_.Vp; }
    int64_t num_labels() const override { return dims_.L; }
    int64_t width() const override { return dims_.C; }
    virtual int64_t context_length() const = 0;  // the longest sequence a pass or a cache takes

    // Sizes activations for batches of B sequences of T tokens (T <= context_length()).
    void plan(int64_t B, int64_t T) final;
    int64_t batch() const { return B_; }
    int64_t seq_len() const { return T_; }
    size_t activation_bytes() const override { return body_bytes() + head_arena_.capacity(); }
    // Whether training's LM head multiplies its logits once: in its one pass
    // (kernels::lm_head_one_pass), or streaming the vocabulary where the head is frozen.
    bool head_one_pass() const {
        return kernels::lm_head_one_pass(gemm_, precision_ == Precision::Bf16) || head_frozen();
    }

    // Batches of up to context_length() tokens per row, ids in [0, vocab_size). The LM head (no
    // num_labels) predicts targets, which may be kIgnoreIndex (-100): only the counted rows
    // reach the head. The classification head pools each sequence's last real token (position
    // lengths[b] - 1, after the final norm), as Hugging Face's *ForSequenceClassification.
    // InputError for an id or label out of range.
    LossSum forward_backward(const Batch& batch, float grad_scale, bool accumulate) final;
    LossSum forward(const Batch& batch) final;
    const float* class_logits() const final { return head_.class_logits; }  // (B, num_labels)
    void final_hidden_rows(const int32_t* rows, int64_t M, float* out) const final;

    // (B·T) per-position losses of the last pass with targets: 0 where ignored.
    const float* token_losses() const { return head_.losses; }
    // Whether position i's target has the highest logit in the last pass with targets
    // (greedy decoding would produce it).
    bool target_is_top(int64_t i) const { return head_.target_logit[i] >= head_.row_max[i]; }
    // (B, T, Vp) from the last forward without targets (with targets, the loss is computed in
    // vocabulary chunks and the full logits never exist).
    const float* logits() const { return logits_.data(); }

    // A KV-cache decoder reading this model's weights (which must outlive it).
    virtual std::unique_ptr<Decoder> decoder(backend::Gemm& gemm) const = 0;

protected:
    CausalLm(ParamLayout layout, Precision precision, backend::Gemm& gemm, HeadDims dims);

    // Where the heads read and write, in the body's planned activations: the final hidden
    // states (N, C) in fp32 (x) or, where only bf16 is kept, x_h; their gradient dx (N, C); the
    // LM head matrix (Vp, C) in fp32 (w) or, in mixed precision, bf16 (w_h); the classifier
    // (L, C).
    struct HeadIo {
        const float* x;
        const uint16_t* x_h;
        float* dx;
        const float* w;
        const uint16_t* w_h;
        const float* score;
    };
    virtual HeadIo head_io() const = 0;
    // Where a training pass's head writes its weights' gradients: the LM head matrix's (null
    // where it is frozen; bf16 where the gradients are, as it is too large for their window)
    // and the classifier's. Only during a backward, after open_head_grads().
    struct HeadGrads {
        kernels::GradOut dw;
        float* dscore;
    };
    virtual HeadGrads head_grads() = 0;
    // Opens the gradient window over the range the head and the final norm write first (a
    // no-op in fp32 gradients).
    virtual void open_head_grads() {}
    // The body's activations for (B, T), and their bytes.
    virtual void plan_body(int64_t B, int64_t T) = 0;
    virtual size_t body_bytes() const = 0;
    // Embeddings, blocks and final norm on inputs (B·T ids, checked); backward from head_io().dx.
    virtual void forward_body(const int32_t* inputs) = 0;
    virtual void backward_body(kernels::WeightGrad mode) = 0;
    // Whether the LM head matrix is frozen (LoRA's base): no gradient is taken for it.
    virtual bool head_frozen() const { return false; }
    // Called when the head does not write the LM head matrix's gradient in an overwriting pass
    // (classification, or no target at all): the model zeroes it if nothing else overwrites it.
    virtual void head_matrix_untouched() = 0;

    backend::Gemm& gemm_;
    int64_t B_ = 0, T_ = 0;
    const int32_t* inputs_ = nullptr;  // of the pass under way, for its backward
    bool training_ = false;            // the pass under way has a backward (dropout applies)
    int64_t step_ = 0;                 // its batch's optimizer step (Batch::step)

private:
    // Plans for the batch, checks its ids, lengths and labels, and runs the body.
    void forward_start(const Batch& batch);
    void check_tokens(const int32_t* ids, bool allow_ignore, const char* what) const;
    kernels::LmHeadLossShape lm_head_shape(int64_t rows) const;  // the head on `rows` rows
    // The rows with a target, gathered where some are ignored; returns how many.
    int64_t gather_head_rows(const int32_t* targets);
    // Where the head reads its rows: gathered, or all of the final hidden states.
    struct HeadRows {
        const float* x;
        const uint16_t* x_h;
        const int32_t* targets;
        float *losses, *target_logit, *row_max, *dx;
    };
    HeadRows head_rows(const int32_t* targets) const;
    // The LM head's losses over the counted rows, and with grad_scale also its gradients in the
    // same pass (d(final hidden) into head_io().dx); then back to positions.
    LossSum lm_head(const int32_t* targets, const float* grad_scale, kernels::WeightGrad mode,
                    const kernels::SoftTargets* soft = nullptr);
    void run_lm_head(const HeadRows& r, int64_t M, const float* grad_scale, kernels::WeightGrad mode,
                     const kernels::SoftTargets* soft);
    LossSum sum_head_losses(const HeadRows& rows, int64_t M) const;
    // The gathered rows' results back to their positions; d(input) into head_io().dx.
    void scatter_head_rows(const HeadRows& r, int64_t M, bool with_grad);
    // The classification head on each sequence's last real token; its backward into dx.
    LossSum classify_head(const int32_t* lengths, const int32_t* labels);
    void classify_head_backward(const int32_t* labels, float dloss, kernels::WeightGrad mode);
    // Logits only (sampling, evaluation by hand): the full (N, Vp) in logits_.
    void all_logits();

    HeadDims dims_;
    Arena head_arena_;
    HeadActs head_;
    AlignedBuffer<float> logits_;       // (B, T, Vp) of a forward without targets
    std::vector<int64_t> pooled_rows_;  // (B) rows of (B·T) the classification head pooled
    bool head_gathered_ = false;        // the LM head runs on the gathered rows alone
};

}  // namespace lmforge
