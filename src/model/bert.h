// A BERT-style encoder (https://arxiv.org/abs/1810.04805), as Hugging Face's BertModel with
// its two heads: word + position + token-type embeddings and a LayerNorm; blocks of
// bidirectional self-attention over each sequence's real tokens (its padding masked) and an
// erf-GELU feed-forward, each followed by residual add and LayerNorm (post-LN); then either the
// masked-LM head (dense, GELU, LayerNorm, decoder tied to the word embeddings, with a bias) or
// the pooler (dense + tanh on [CLS], the first position) and a classifier. Parameters under
// Hugging Face's names and shapes (bert_params.h); backward written out, as GPT-2's.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "backend/gemm.h"
#include "core/arena.h"
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
    size_t activation_bytes() const { return arena_.capacity(); }
    int64_t vocab_size() const override { return cfg_.vocab_size; }
    int64_t num_labels() const override { return cfg_.num_labels; }

    // Masked LM (num_labels 0). inputs (B, T) with each sequence's lengths[b] real tokens first;
    // targets (B, T): the id to predict where a token was masked, kIgnoreIndex elsewhere (and at
    // padding). Returns the mean loss over predicted positions; only those rows go through the
    // head. targets null: logits() for every position instead.
    float forward_mlm(const int32_t* inputs, const int32_t* lengths, const int32_t* targets);
    // Of the last forward_mlm with targets: positions predicted, and those whose highest logit
    // is the target (masked-token accuracy).
    int64_t mlm_predicted() const { return counted_; }
    int64_t mlm_correct() const { return mlm_correct_; }
    const float* logits() const { return logits_.data(); }  // (B, T, V) of a forward_mlm without targets

    float forward_classify(const int32_t* inputs, const int32_t* lengths, const int32_t* labels) override;
    const float* class_logits() const override { return acts_.class_logits; }

    const float* hidden() const;  // (B, T, H): the last forward's encoder output

    void backward(float loss_scale = 1.0f) override;

private:
    // out (N, OC) = inp · wᵀ + b in the model's precision: inp in fp32, or inp_h in bf16.
    void linear(float* out, const float* inp, const uint16_t* inp_h, const float* w, const float* b, int64_t N,
                int64_t C, int64_t OC);
    void linear_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                         const uint16_t* inp_h, const float* w, int64_t N, int64_t C, int64_t OC,
                         kernels::WeightGrad mode);
    // The bf16 copy of an fp32 activation that feeds a GEMM (mixed precision only).
    void half_copy(uint16_t* out_h, const float* x, int64_t n);
    void check_batch(const int32_t* inputs, const int32_t* lengths);
    void forward_body(const int32_t* inputs, const int32_t* lengths);
    // From acts_.dx = d(loss)/d(encoder output) down to the embeddings.
    void backward_body(kernels::WeightGrad mode);
    // The decoder and loss's gradients (into acts_.dhead_a, the word embedding, the decoder
    // bias), then the transform's, into acts_.dx.
    void mlm_decoder_backward(float dloss, bool accumulate);
    void mlm_transform_backward(kernels::WeightGrad mode);
    void classify_head_backward(float dloss, bool accumulate, kernels::WeightGrad mode);

    BertConfig cfg_;
    backend::Gemm& gemm_;
    BertParams p_, g_;  // views of params_ and grads_
    Arena arena_;
    BertActs acts_;
    AlignedBuffer<float> logits_;  // (B, T, V) of a forward_mlm without targets
    int64_t B_ = 0, T_ = 0;
    int64_t mlm_rows_ = 0;  // rows through the MLM head in the last forward
    const int32_t* inputs_ = nullptr;  // of the last forward, for backward
    std::vector<int32_t> lengths_;
    const int32_t* labels_ = nullptr;
    bool mlm_pending_ = false;  // the last forward was forward_mlm with targets
    // Set when the last forward (after expect_backward) computed the decoder's gradients:
    // the loss scale it used, and whether the weight gradients were overwritten or added to.
    std::optional<float> head_grads_scale_;
    kernels::WeightGrad head_grads_mode_ = kernels::WeightGrad::Overwrite;
    int64_t counted_ = 0, mlm_correct_ = 0;
    std::vector<int64_t> layer_begin_;  // offset of each layer's first tensor; then the head's
};

}  // namespace lmforge
