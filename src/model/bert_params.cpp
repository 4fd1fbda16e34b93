#include "model/bert_params.h"

#include <fmt/format.h>

#include <cassert>

#include "core/error.h"

namespace lmforge {

namespace {

enum class Init { Normal, Zeros, Ones };

const BertTensorNames kBertNames{
    "bert.embeddings", "bert.encoder.layer.", "attention.self.query", "attention.self.key",
    "attention.self.value", "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
    "output.dense", "output.LayerNorm", "bert.pooler.dense", "cls.predictions.transform.dense",
    "cls.predictions.transform.LayerNorm", "cls.predictions"};
const BertTensorNames kDistilBertNames{
    "distilbert.embeddings", "distilbert.transformer.layer.", "attention.q_lin", "attention.k_lin",
    "attention.v_lin", "attention.out_lin", "sa_layer_norm", "ffn.lin1", "ffn.lin2", "output_layer_norm",
    "pre_classifier", "vocab_transform", "vocab_layer_norm", "vocab_projector"};

// Calls fn(name, shape, reserved, init, slot) for every tensor in layout order (slot null for
// the tensors the model addresses through a fused neighbour): embeddings, each layer's tensors
// together (its gradients finish together in backward), then the head.
template <class Fn>
void visit_bert_params(const BertConfig& cfg, BertParams& p, Fn&& fn) {
    const int64_t H = cfg.hidden, I = cfg.intermediate;
    const BertTensorNames& n = bert_tensor_names(cfg);
    const auto emb = [&](const char* leaf) { return fmt::format("{}.{}", n.embeddings, leaf); };
    float* none = nullptr;
    fn(emb("word_embeddings.weight"), {cfg.vocab_size, H}, cfg.padded_vocab() * H, Init::Normal, p.word);
    fn(emb("position_embeddings.weight"), {cfg.max_position, H}, 0, Init::Normal, p.position);
    if (!cfg.distil()) fn(emb("token_type_embeddings.weight"), {cfg.type_vocab_size, H}, 0, Init::Normal, p.token_type);
    fn(emb("LayerNorm.weight"), {H}, 0, Init::Ones, p.emb_ln_weight);
    fn(emb("LayerNorm.bias"), {H}, 0, Init::Zeros, p.emb_ln_bias);
    p.layer.resize(cfg.n_layer);
    for (int64_t l = 0; l < cfg.n_layer; l++) {
        BertLayerParams& b = p.layer[l];
        const auto w = [&](const char* leaf) { return fmt::format("{}{}.{}.weight", n.layer_prefix, l, leaf); };
        const auto bias = [&](const char* leaf) { return fmt::format("{}{}.{}.bias", n.layer_prefix, l, leaf); };
        fn(w(n.query), {H, H}, 0, Init::Normal, b.qkv_weight);
        fn(w(n.key), {H, H}, 0, Init::Normal, none);
        fn(w(n.value), {H, H}, 0, Init::Normal, none);
        fn(bias(n.query), {H}, 0, Init::Zeros, b.qkv_bias);
        fn(bias(n.key), {H}, 0, Init::Zeros, none);
        fn(bias(n.value), {H}, 0, Init::Zeros, none);
        fn(w(n.attn_out), {H, H}, 0, Init::Normal, b.attn_out_weight);
        fn(bias(n.attn_out), {H}, 0, Init::Zeros, b.attn_out_bias);
        fn(w(n.attn_ln), {H}, 0, Init::Ones, b.attn_ln_weight);
        fn(bias(n.attn_ln), {H}, 0, Init::Zeros, b.attn_ln_bias);
        fn(w(n.inter), {I, H}, 0, Init::Normal, b.inter_weight);
        fn(bias(n.inter), {I}, 0, Init::Zeros, b.inter_bias);
        fn(w(n.out), {H, I}, 0, Init::Normal, b.out_weight);
        fn(bias(n.out), {H}, 0, Init::Zeros, b.out_bias);
        fn(w(n.out_ln), {H}, 0, Init::Ones, b.out_ln_weight);
        fn(bias(n.out_ln), {H}, 0, Init::Zeros, b.out_ln_bias);
    }
    const auto head = [](const char* prefix, const char* leaf) { return fmt::format("{}.{}", prefix, leaf); };
    if (cfg.num_labels > 0) {
        fn(head(n.pooler, "weight"), {H, H}, 0, Init::Normal, p.pooler_weight);
        fn(head(n.pooler, "bias"), {H}, 0, Init::Zeros, p.pooler_bias);
        fn("classifier.weight", {cfg.num_labels, H}, 0, Init::Normal, p.classifier_weight);
        fn("classifier.bias", {cfg.num_labels}, 0, Init::Zeros, p.classifier_bias);
    } else {
        fn(head(n.mlm_dense, "weight"), {H, H}, 0, Init::Normal, p.mlm_dense_weight);
        fn(head(n.mlm_dense, "bias"), {H}, 0, Init::Zeros, p.mlm_dense_bias);
        fn(head(n.mlm_ln, "weight"), {H}, 0, Init::Ones, p.mlm_ln_weight);
        fn(head(n.mlm_ln, "bias"), {H}, 0, Init::Zeros, p.mlm_ln_bias);
        fn(head(n.mlm_bias, "bias"), {cfg.vocab_size}, 0, Init::Zeros, p.mlm_bias);
    }
}

}  // namespace

const BertTensorNames& bert_tensor_names(const BertConfig& cfg) { return cfg.distil() ? kDistilBertNames : kBertNames; }

ParamLayout bert_param_layout(const BertConfig& cfg) {
    ParamLayout layout;
    BertParams unused;
    visit_bert_params(cfg, unused, [&](std::string name, std::vector<int64_t> shape, int64_t reserved, Init, float*&) {
        layout.add(std::move(name), std::move(shape), reserved);
    });
    return layout;
}

BertParams bind_bert_params(const BertConfig& cfg, const ParamLayout& layout, float* base) {
    BertParams p;
    size_t i = 0;
    visit_bert_params(cfg, p, [&](const std::string& name, const std::vector<int64_t>&, int64_t, Init, float*& slot) {
        assert(layout.specs()[i].name == name);
        (void)name;
        slot = base + layout.specs()[i++].offset;
    });
    // The fused query/key/value GEMM reads the three as one tensor.
    const int64_t H = cfg.hidden;
    const BertTensorNames& n = bert_tensor_names(cfg);
    for (int64_t l = 0; l < cfg.n_layer; l++) {
        const auto offset = [&](const char* leaf, const char* kind) {
            return layout.find(fmt::format("{}{}.{}.{}", n.layer_prefix, l, leaf, kind)).offset;
        };
        if (offset(n.value, "weight") != offset(n.query, "weight") + 2 * H * H ||
            offset(n.value, "bias") != offset(n.query, "bias") + 2 * H) {
            throw Error("the encoder's query, key and value tensors are not contiguous in the parameter layout");
        }
    }
    return p;
}

void init_bert_params(const BertConfig& cfg, const ParamLayout& layout, float* base, Rng& rng) {
    BertParams unused;
    size_t i = 0;
    visit_bert_params(cfg, unused, [&](const std::string&, const std::vector<int64_t>&, int64_t, Init init, float*&) {
        const ParamSpec& spec = layout.specs()[i++];
        float* x = base + spec.offset;
        std::fill_n(x, spec.reserved, 0.0f);  // padding rows stay zero
        if (init == Init::Normal) rng.fill_normal(x, spec.numel, 0.0f, 0.02f);
        if (init == Init::Ones) std::fill_n(x, spec.numel, 1.0f);
    });
}

}  // namespace lmforge
