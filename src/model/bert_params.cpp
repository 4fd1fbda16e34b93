#include "model/bert_params.h"

#include <fmt/format.h>

#include <cassert>

#include "core/error.h"

namespace lmforge {

namespace {

enum class Init { Normal, Zeros, Ones };

// Calls fn(name, shape, reserved, init, slot) for every tensor in layout order (slot null for
// the tensors the model addresses through a fused neighbour): embeddings, each layer's tensors
// together (its gradients finish together in backward), then the head.
template <class Fn>
void visit_bert_params(const BertConfig& cfg, BertParams& p, Fn&& fn) {
    const int64_t H = cfg.hidden, I = cfg.intermediate;
    float* none = nullptr;
    fn("bert.embeddings.word_embeddings.weight", {cfg.vocab_size, H}, cfg.padded_vocab() * H, Init::Normal, p.word);
    fn("bert.embeddings.position_embeddings.weight", {cfg.max_position, H}, 0, Init::Normal, p.position);
    fn("bert.embeddings.token_type_embeddings.weight", {cfg.type_vocab_size, H}, 0, Init::Normal, p.token_type);
    fn("bert.embeddings.LayerNorm.weight", {H}, 0, Init::Ones, p.emb_ln_weight);
    fn("bert.embeddings.LayerNorm.bias", {H}, 0, Init::Zeros, p.emb_ln_bias);
    p.layer.resize(cfg.n_layer);
    for (int64_t l = 0; l < cfg.n_layer; l++) {
        BertLayerParams& b = p.layer[l];
        const auto name = [l](const char* leaf) { return fmt::format("bert.encoder.layer.{}.{}", l, leaf); };
        fn(name("attention.self.query.weight"), {H, H}, 0, Init::Normal, b.qkv_weight);
        fn(name("attention.self.key.weight"), {H, H}, 0, Init::Normal, none);
        fn(name("attention.self.value.weight"), {H, H}, 0, Init::Normal, none);
        fn(name("attention.self.query.bias"), {H}, 0, Init::Zeros, b.qkv_bias);
        fn(name("attention.self.key.bias"), {H}, 0, Init::Zeros, none);
        fn(name("attention.self.value.bias"), {H}, 0, Init::Zeros, none);
        fn(name("attention.output.dense.weight"), {H, H}, 0, Init::Normal, b.attn_out_weight);
        fn(name("attention.output.dense.bias"), {H}, 0, Init::Zeros, b.attn_out_bias);
        fn(name("attention.output.LayerNorm.weight"), {H}, 0, Init::Ones, b.attn_ln_weight);
        fn(name("attention.output.LayerNorm.bias"), {H}, 0, Init::Zeros, b.attn_ln_bias);
        fn(name("intermediate.dense.weight"), {I, H}, 0, Init::Normal, b.inter_weight);
        fn(name("intermediate.dense.bias"), {I}, 0, Init::Zeros, b.inter_bias);
        fn(name("output.dense.weight"), {H, I}, 0, Init::Normal, b.out_weight);
        fn(name("output.dense.bias"), {H}, 0, Init::Zeros, b.out_bias);
        fn(name("output.LayerNorm.weight"), {H}, 0, Init::Ones, b.out_ln_weight);
        fn(name("output.LayerNorm.bias"), {H}, 0, Init::Zeros, b.out_ln_bias);
    }
    if (cfg.num_labels > 0) {
        fn("bert.pooler.dense.weight", {H, H}, 0, Init::Normal, p.pooler_weight);
        fn("bert.pooler.dense.bias", {H}, 0, Init::Zeros, p.pooler_bias);
        fn("classifier.weight", {cfg.num_labels, H}, 0, Init::Normal, p.classifier_weight);
        fn("classifier.bias", {cfg.num_labels}, 0, Init::Zeros, p.classifier_bias);
    } else {
        fn("cls.predictions.transform.dense.weight", {H, H}, 0, Init::Normal, p.mlm_dense_weight);
        fn("cls.predictions.transform.dense.bias", {H}, 0, Init::Zeros, p.mlm_dense_bias);
        fn("cls.predictions.transform.LayerNorm.weight", {H}, 0, Init::Ones, p.mlm_ln_weight);
        fn("cls.predictions.transform.LayerNorm.bias", {H}, 0, Init::Zeros, p.mlm_ln_bias);
        fn("cls.predictions.bias", {cfg.vocab_size}, 0, Init::Zeros, p.mlm_bias);
    }
}

}  // namespace

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
    for (int64_t l = 0; l < cfg.n_layer; l++) {
        const auto offset = [&](const char* leaf) {
            return layout.find(fmt::format("bert.encoder.layer.{}.attention.self.{}", l, leaf)).offset;
        };
        if (offset("value.weight") != offset("query.weight") + 2 * H * H ||
            offset("value.bias") != offset("query.bias") + 2 * H) {
            throw Error("BERT's query, key and value tensors are not contiguous in the parameter layout");
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
