// BERT's and DistilBERT's parameters under Hugging Face's names and shapes (BertForMaskedLM,
// BertForSequenceClassification, DistilBertForMaskedLM, DistilBertForSequenceClassification), so
// checkpoints move to and from transformers unchanged. Linear weights are torch.nn.Linear's
// (out, in). One function declares every tensor; layout, binding and init come from it, as
// GPT-2's.
#pragma once

#include <vector>

#include "core/rng.h"
#include "model/bert_config.h"
#include "model/param_layout.h"

namespace lmforge {

struct BertLayerParams {
    // query, key and value back to back: one (3H, H) weight and one (3H) bias.
    float *qkv_weight, *qkv_bias;
    float *attn_out_weight, *attn_out_bias;  // (H, H), (H)
    float *attn_ln_weight, *attn_ln_bias;    // (H): the post-attention LayerNorm
    float *inter_weight, *inter_bias;        // (I, H), (I)
    float *out_weight, *out_bias;            // (H, I), (H)
    float *out_ln_weight, *out_ln_bias;      // (H): the block's closing LayerNorm
};

struct BertParams {
    float* word = nullptr;  // (Vp, H); rows >= V are zero. Also the MLM decoder (tied).
    float* position = nullptr;    // (max_position, H)
    float* token_type = nullptr;  // (type_vocab_size, H); null for DistilBERT
    float *emb_ln_weight = nullptr, *emb_ln_bias = nullptr;
    std::vector<BertLayerParams> layer;
    // Classification (num_labels > 0): pooler (H, H), (H) — DistilBERT's pre_classifier;
    // classifier (L, H), (L).
    float *pooler_weight = nullptr, *pooler_bias = nullptr, *classifier_weight = nullptr, *classifier_bias = nullptr;
    // Masked LM (num_labels == 0): transform dense (H, H), (H), its LayerNorm, decoder bias (V).
    float *mlm_dense_weight = nullptr, *mlm_dense_bias = nullptr, *mlm_ln_weight = nullptr, *mlm_ln_bias = nullptr,
          *mlm_bias = nullptr;
};

// Hugging Face's names where the two families differ: a layer's tensors are
// layer_prefix + "{l}." + leaf + ".weight" (or ".bias").
struct BertTensorNames {
    const char* embeddings;  // + ".word_embeddings.weight", ...
    const char* layer_prefix;
    const char *query, *key, *value, *attn_out, *attn_ln, *inter, *out, *out_ln;
    const char* pooler;                        // the classification head's first linear layer
    const char *mlm_dense, *mlm_ln;  // the masked-LM head's transform
    const char* mlm_bias;            // + ".bias": its output bias (the decoder weight is the word embedding)
};
const BertTensorNames& bert_tensor_names(const BertConfig& cfg);

ParamLayout bert_param_layout(const BertConfig& cfg);
BertParams bind_bert_params(const BertConfig& cfg, const ParamLayout& layout, float* base);
// BERT's init (transformers' BertPreTrainedModel): linear weights and embeddings normal(0,
// 0.02), biases 0, LayerNorm weight 1 and bias 0.
void init_bert_params(const BertConfig& cfg, const ParamLayout& layout, float* base, Rng& rng);

}  // namespace lmforge
