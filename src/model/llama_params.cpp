#include "model/llama_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace lmforge {

namespace {

// Calls fn(name, shape, reserved, slot) for every tensor in layout order (the slot of a
// tensor that is the second or third part of a fused matrix is a scratch: the fused matrix is
// reached through its first part). A block's tensors lie together, so its gradients finish
// together in backward.
template <class P, class Fn>
void visit_llama_params(const LlamaConfig& cfg, bool with_score, LlamaWeights<P>& p, Fn&& fn) {
    const int64_t C = cfg.n_embd, KV = cfg.kv_width(), I = cfg.intermediate, Vp = cfg.padded_vocab();
    P part = nullptr;
    fn("model.embed_tokens.weight", {cfg.vocab_size, C}, Vp * C, p.embed);
    p.layers.resize(cfg.n_layer);
    for (int64_t l = 0; l < cfg.n_layer; l++) {
        LlamaLayerWeights<P>& b = p.layers[l];
        const auto name = [l](const char* leaf) { return fmt::format("model.layers.{}.{}", l, leaf); };
        fn(name("input_layernorm.weight"), {C}, 0, b.input_norm);
        fn(name("self_attn.q_proj.weight"), {C, C}, 0, b.qkv);
        fn(name("self_attn.k_proj.weight"), {KV, C}, 0, part);
        fn(name("self_attn.v_proj.weight"), {KV, C}, 0, part);
        fn(name("self_attn.o_proj.weight"), {C, C}, 0, b.o_proj);
        fn(name("post_attention_layernorm.weight"), {C}, 0, b.post_norm);
        fn(name("mlp.gate_proj.weight"), {I, C}, 0, b.gate_up);
        fn(name("mlp.up_proj.weight"), {I, C}, 0, part);
        fn(name("mlp.down_proj.weight"), {C, I}, 0, b.down_proj);
    }
    fn("model.norm.weight", {C}, 0, p.norm);
    if (!cfg.tie_embeddings && cfg.num_labels == 0) fn("lm_head.weight", {cfg.vocab_size, C}, Vp * C, p.lm_head);
    if (cfg.num_labels > 0 && with_score) fn("score.weight", {cfg.num_labels, C}, 0, p.score);
}

// The fused matrices are one GEMM operand only if their parts follow each other with no
// alignment gap: the layout aligns each tensor to 64 bytes, so every part must be a multiple
// of 16 floats (true when hidden_size is a multiple of 4).
void check_fused(const LlamaConfig& cfg, const ParamLayout& layout) {
    for (const auto& [first, second] : {std::pair{"self_attn.q_proj", "self_attn.k_proj"},
                                        {"self_attn.k_proj", "self_attn.v_proj"}, {"mlp.gate_proj", "mlp.up_proj"}}) {
        const ParamSpec& a = layout.find(fmt::format("model.layers.0.{}.weight", first));
        const ParamSpec& b = layout.find(fmt::format("model.layers.0.{}.weight", second));
        if (a.offset + a.numel != b.offset) {
            throw InputError(fmt::format("hidden_size = {} must be a multiple of 4", cfg.n_embd));
        }
    }
}

}  // namespace

ParamLayout llama_param_layout(const LlamaConfig& cfg, bool with_score) {
    ParamLayout layout;
    LlamaWeights<float*> unused;
    visit_llama_params(cfg, with_score, unused,
                       [&](std::string name, std::vector<int64_t> shape, int64_t reserved, float*&) {
                           layout.add(std::move(name), std::move(shape), reserved);
                       });
    check_fused(cfg, layout);
    return layout;
}

template <class T>
LlamaWeights<T*> bind_llama_params(const LlamaConfig& cfg, const ParamLayout& layout, T* base) {
    LlamaWeights<T*> p;
    const bool with_score = layout.specs().back().name == "score.weight";
    size_t i = 0;
    visit_llama_params(cfg, with_score, p, [&](const std::string&, const std::vector<int64_t>&, int64_t, T*& slot) {
        slot = base + layout.specs()[i++].offset;
    });
    return p;
}

template LlamaWeights<float*> bind_llama_params(const LlamaConfig&, const ParamLayout&, float*);
template LlamaWeights<const uint16_t*> bind_llama_params(const LlamaConfig&, const ParamLayout&, const uint16_t*);

void init_llama_params(const ParamLayout& layout, float* base, Rng& rng) {
    for (const ParamSpec& spec : layout.specs()) {
        float* x = base + spec.offset;
        std::fill_n(x, spec.reserved, 0.0f);  // padding rows stay zero
        if (spec.shape.size() == 1) {
            std::fill_n(x, spec.numel, 1.0f);
        } else {
            rng.fill_normal(x, spec.numel, 0.0f, 0.02f);
        }
    }
}

}  // namespace lmforge
