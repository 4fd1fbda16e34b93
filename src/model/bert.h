// A BERT-style encoder (https://arxiv.org/abs/1810.04805), as Hugging Face's BertModel with
// its two heads: word + position + token-type embeddings and a LayerNorm; blocks of
// bidirectional self-attention over each sequence's real tokens (its padding masked) and an
// erf-GELU feed-forward, each followed by residual add and LayerNorm (post-LN); then either the
// masked-LM head (dense, GELU, LayerNorm, decoder tied to the word embeddings, with a bias) or
// the pooler (dense + tanh on [CLS], the first position) and a classifier. DistilBERT is the same
// without token types, with ReLU in the pooler's place (BertConfig::family). Parameters under
// Hugging Face's names and shapes (bert_params.h); backward written out, as GPT-2's.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/gemm.h"
#include "core/arena.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "model/bert_acts.h"
#include "model/bert_config.h"
#include "model/bert_params.h"
#include "model/model.h"

namespace lmforge {

class Bert : public Model {
public:
    // Validates cfg (InputError). Parameters start at zero; call init_weights or load them.
    Bert(const BertConfig& cfg, backend::Gemm& gemm, Precision precision = Precision::Fp32);

    const BertConfig& config() const { return cfg_; }
    std::string config_json() const override { return cfg_.to_json(); }
    const BertParams& weights() const { return p_; }  // typed views of params()
    void init_weights(uint64_t seed) override;

    void plan(int64_t B, int64_t T) override;
    int64_t batch() const { return B_; }
    int64_t seq_len() const { return T_; }
    size_t activation_bytes() const override { return arena_.capacity(); }
    int64_t vocab_size() const override { return cfg_.vocab_size; }
    int64_t num_labels() const override { return cfg_.num_labels; }

    // forward_backward and forward (model.h): batches of up to max_position tokens per row
    // with lengths (each sequence's real tokens first; padding keys are masked). The masked-LM
    // head (num_labels 0) predicts targets: the id where a token was masked, kIgnoreIndex
    // elsewhere (and at padding); only those rows go through the head. Without targets,
    // logits() for every position. The classification head reads [CLS], the first position.
    LossSum forward_backward(const Batch& batch, float grad_scale, bool accumulate) override;
    LossSum forward(const Batch& batch) override;
    const float* class_logits() const override { return acts_.class_logits; }
    int64_t width() const override { return cfg_.hidden; }
    void final_hidden_rows(const int32_t* rows, int64_t M, float* out) const override;  // the encoder's output
    const float* logits() const { return logits_.data(); }  // (B, T, V) of a pass without targets
    const float* hidden() const;  // (B, T, H): the last pass's encoder output

private:
    // out (N, OC) = inp · wᵀ + b in the model's precision: inp in fp32, or inp_h in bf16.
    void linear(float* out, const float* inp, const uint16_t* inp_h, const float* w, const float* b, int64_t N,
                int64_t C, int64_t OC);
    // The same for an output kept for backward: out in fp32, or out_h in bf16.
    void linear(float* out, uint16_t* out_h, const float* inp, const uint16_t* inp_h, const float* w,
                const float* b, int64_t N, int64_t C, int64_t OC);
    void linear_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                         const uint16_t* inp_h, const float* w, int64_t N, int64_t C, int64_t OC,
                         kernels::WeightGrad mode);
    // The bf16 copy of an fp32 activation that feeds a GEMM (mixed precision only).
    void half_copy(uint16_t* out_h, const float* x, int64_t n);
    // Plans for the batch, checks its ids, lengths, targets and labels, and runs the body.
    void forward_start(const Batch& batch);
    void check_batch(const Batch& batch) const;
    void forward_body(const int32_t* inputs, const int32_t* lengths);
    kernels::AttentionMask attention_mask() const;  // every key of a sequence up to its length
    void embeddings_forward(const int32_t* inputs);
    // Layer l's two post-norm sublayers: attention from its input x, then the MLP.
    void attention_sublayer(int64_t l, const float* x, const uint16_t* x_h);
    void mlp_sublayer(int64_t l);
    // The masked rows through the transform (all rows without targets); returns how many.
    int64_t mlm_transform_forward(const int32_t* targets);
    void mlm_logits();  // (B·T, V) for every row, into logits_
    // The decoder's losses over the masked rows, and with grad_scale their gradients in the
    // same pass, then the transform's, into acts_.dx.
    LossSum mlm_head(const int32_t* targets, const float* grad_scale, kernels::WeightGrad mode,
                     const kernels::SoftTargets* soft = nullptr);
    LossSum classify_head(const int32_t* labels);
    // From acts_.dx = d(loss)/d(encoder output) down to the embeddings.
    void backward_body(kernels::WeightGrad mode);
    void mlp_sublayer_backward(int64_t l, const BertLayerParams& dw, kernels::WeightGrad mode);
    void attention_sublayer_backward(int64_t l, const BertLayerParams& dw, kernels::WeightGrad mode);
    void embeddings_backward();
    // The decoder and loss's gradients (into acts_.dhead_a, the word embedding, the decoder
    // bias), then the transform's, into acts_.dx.
    void mlm_decoder_backward(kernels::GradOut dword, float* dbias, float dloss, bool accumulate);
    void mlm_transform_backward(kernels::WeightGrad mode);
    void classify_head_backward(const int32_t* labels, float dloss, kernels::WeightGrad mode);
    int64_t grad_window() const override;
    // Where layer l's gradients are written (grad_of each of its tensors).
    BertLayerParams layer_grads(int64_t l);

    BertConfig cfg_;
    backend::Gemm& gemm_;
    BertParams p_;  // views of params_
    Arena arena_;
    BertActs acts_;
    AlignedBuffer<float> logits_;  // (B, T, V) of a masked-LM pass without targets
    int64_t B_ = 0, T_ = 0;
    int64_t mlm_rows_ = 0;  // rows through the MLM head in the pass under way
    const int32_t* inputs_ = nullptr;  // of the pass under way, for its backward
    std::vector<int32_t> lengths_;
    std::vector<int64_t> layer_begin_;  // offset of each layer's first tensor; then the head's
};

}  // namespace lmforge
