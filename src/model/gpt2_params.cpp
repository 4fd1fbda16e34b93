#include "model/gpt2_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

namespace lmforge {

namespace {

// Calls fn(name, shape, reserved, init, slot) for every tensor, in layout order: the
// embeddings, then each block's tensors together (so a block's gradients are contiguous and
// finish together in backward), then the final LayerNorm.
template <class Fn>
void visit_gpt2_params(const Gpt2Config& cfg, Gpt2Params& p, Fn&& fn) {
    const int64_t C = cfg.n_embd;
    fn("wte.weight", {cfg.vocab_size, C}, cfg.padded_vocab() * C, ParamInit::Normal, p.wte);
    fn("wpe.weight", {cfg.block_size, C}, 0, ParamInit::Normal, p.wpe);
    p.h.resize(cfg.n_layer);
    for (int64_t l = 0; l < cfg.n_layer; l++) {
        Gpt2LayerParams& b = p.h[l];
        const auto name = [l](const char* leaf) { return fmt::format("h.{}.{}", l, leaf); };
        fn(name("ln_1.weight"), {C}, 0, ParamInit::Ones, b.ln_1_weight);
        fn(name("ln_1.bias"), {C}, 0, ParamInit::Zeros, b.ln_1_bias);
        fn(name("attn.c_attn.weight"), {C, 3 * C}, 0, ParamInit::Normal, b.c_attn_weight);
        fn(name("attn.c_attn.bias"), {3 * C}, 0, ParamInit::Zeros, b.c_attn_bias);
        fn(name("attn.c_proj.weight"), {C, C}, 0, ParamInit::ResidualProjection,
           b.attn_c_proj_weight);
        fn(name("attn.c_proj.bias"), {C}, 0, ParamInit::Zeros, b.attn_c_proj_bias);
        fn(name("ln_2.weight"), {C}, 0, ParamInit::Ones, b.ln_2_weight);
        fn(name("ln_2.bias"), {C}, 0, ParamInit::Zeros, b.ln_2_bias);
        fn(name("mlp.c_fc.weight"), {C, 4 * C}, 0, ParamInit::Normal, b.c_fc_weight);
        fn(name("mlp.c_fc.bias"), {4 * C}, 0, ParamInit::Zeros, b.c_fc_bias);
        fn(name("mlp.c_proj.weight"), {4 * C, C}, 0, ParamInit::ResidualProjection,
           b.mlp_c_proj_weight);
        fn(name("mlp.c_proj.bias"), {C}, 0, ParamInit::Zeros, b.mlp_c_proj_bias);
    }
    fn("ln_f.weight", {C}, 0, ParamInit::Ones, p.ln_f_weight);
    fn("ln_f.bias", {C}, 0, ParamInit::Zeros, p.ln_f_bias);
    if (cfg.num_labels > 0) fn("score.weight", {cfg.num_labels, C}, 0, ParamInit::Normal, p.score);
}

}  // namespace

ParamLayout gpt2_param_layout(const Gpt2Config& cfg) {
    ParamLayout layout;
    Gpt2Params unused;
    visit_gpt2_params(cfg, unused,
                      [&](std::string name, std::vector<int64_t> shape, int64_t reserved,
                          ParamInit, float*&) { layout.add(std::move(name), std::move(shape), reserved); });
    return layout;
}

Gpt2Params bind_gpt2_params(const Gpt2Config& cfg, const ParamLayout& layout, float* base) {
    Gpt2Params p;
    size_t i = 0;
    visit_gpt2_params(cfg, p, [&](const std::string& name, const std::vector<int64_t>&, int64_t,
                                  ParamInit, float*& slot) {
        assert(layout.specs()[i].name == name);
        (void)name;
        slot = base + layout.specs()[i++].offset;
    });
    return p;
}

void init_gpt2_params(const Gpt2Config& cfg, const ParamLayout& layout, float* base,
                      Rng& rng) {
    const float std_normal = 0.02f;
    const float std_residual = 0.02f / std::sqrt(2.0f * static_cast<float>(cfg.n_layer));
    Gpt2Params unused;
    size_t i = 0;
    visit_gpt2_params(cfg, unused, [&](const std::string&, const std::vector<int64_t>&, int64_t,
                                       ParamInit init, float*&) {
        const ParamSpec& spec = layout.specs()[i++];
        float* x = base + spec.offset;
        std::fill_n(x, spec.reserved, 0.0f);  // padding rows stay zero
        switch (init) {
            case ParamInit::Normal: rng.fill_normal(x, spec.numel, 0.0f, std_normal); break;
            case ParamInit::ResidualProjection:
                rng.fill_normal(x, spec.numel, 0.0f, std_residual);
                break;
            case ParamInit::Zeros: break;
            case ParamInit::Ones: std::fill_n(x, spec.numel, 1.0f); break;
        }
    });
}

}  // namespace lmforge
