#include "model/llama_acts.h"

#include <algorithm>
#include <type_traits>

namespace lmforge {

namespace {

// Calls fn(numel, slot) for every buffer (numel 0 leaves it null), then share(slot, from) for
// a layer's buffer that is layer 0's.
template <class Fn, class Share>
void visit_llama_acts(const LlamaConfig& cfg, int64_t B, int64_t T, Precision precision, Recompute recompute,
                      const LoraOptions& lora, LlamaActs& a, Fn&& fn, Share&& share) {
    const int64_t N = B * T, C = cfg.n_embd, W = cfg.qkv_width(), I = cfg.intermediate;
    const int64_t h = precision == Precision::Bf16 ? 1 : 0, f = 1 - h;
    fn(N * C, a.embedded);
    a.layers.resize(cfg.n_layer);
    const bool keep_block = recompute != Recompute::Block;
    const bool keep_pointwise = recompute == Recompute::None;
    for (size_t i = 0; i < a.layers.size(); i++) {
        LlamaLayerActs& l = a.layers[i];
        const LlamaLayerActs& first = a.layers[0];
        const auto kept = [&](auto*& slot, auto* const& in_first, int64_t n, bool keep) {
            if (keep || i == 0) {
                fn(n, slot);
            } else {
                share(slot, in_first);
            }
        };
        kept(l.ln1, first.ln1, f * N * C, keep_pointwise);
        kept(l.ln1_rstd, first.ln1_rstd, N, keep_block);
        kept(l.qkv, first.qkv, N * W, keep_block && f == 1);
        kept(l.atty, first.atty, N * C, keep_block);
        kept(l.att_lse, first.att_lse, B * cfg.n_head * T, keep_block);
        kept(l.res2, first.res2, N * C, keep_block);
        kept(l.ln2, first.ln2, f * N * C, keep_pointwise);
        kept(l.ln2_rstd, first.ln2_rstd, N, keep_block);
        kept(l.gate_up, first.gate_up, N * 2 * I, keep_block && f == 1);
        kept(l.act, first.act, f * N * I, keep_pointwise);
        fn(N * C, l.res3);
        kept(l.ln1_h, first.ln1_h, h * N * C, keep_pointwise);
        kept(l.qkv_h, first.qkv_h, h * N * W, keep_block);
        kept(l.atty_h, first.atty_h, h * N * C, keep_block);
        kept(l.ln2_h, first.ln2_h, h * N * C, keep_pointwise);
        kept(l.gate_up_h, first.gate_up_h, h * N * 2 * I, keep_block);
        kept(l.act_h, first.act_h, h * N * I, keep_pointwise);
        for (const auto& [first, last] : kLoraGroups) {
            // Kept in every mode (N · rank each): a recompute need not redo the adapters whose
            // outputs it skips (down_proj's).
            int64_t in_use = 0;
            for (int t = static_cast<int>(first); t <= static_cast<int>(last); t++) in_use += lora.targets[t] ? 1 : 0;
            if (lora.enabled() && in_use > 0) fn(N * lora.rank * in_use, l.lora_us[static_cast<int>(first)]);
        }
    }
    fn(f * N * C, a.lnf);
    fn(N, a.lnf_rstd);
    fn(h * N * C, a.lnf_h);
    fn(T * cfg.head_size() / 2, a.rope_cos);
    fn(T * cfg.head_size() / 2, a.rope_sin);
    fn(N * C, a.proj);
    fn(N * C, a.dres);
    fn(N * C, a.dln);
    fn(N * C, a.datty);
    fn(N * W, a.dqkv);
    fn(N * I, a.dact);
    fn(f * N * 2 * I, a.dgate_up);
    fn(h * N * std::max(2 * I, W), a.dout_h);
    const int64_t adapters = lora.enabled() ? 1 : 0, widest = std::max(C, I);
    const int64_t stacked = adapters * kLoraGroupMax * lora.rank;
    fn(stacked * N, a.lora_du);
    fn(h * stacked * N, a.lora_u_h);
    fn(adapters * N * widest, a.lora_x);
    fn(adapters * h * N * widest, a.lora_x_h);
    fn(adapters * lora.rank * widest, a.lora_dBt);
    fn(f * stacked * C, a.lora_A);  // only groups of several stack their A: they read width C
    fn(h * stacked * C, a.lora_A_h);
    fn(stacked * C, a.lora_dA);
    fn(adapters * N, a.lora_keys);
}

}  // namespace

size_t llama_acts_bytes(const LlamaConfig& cfg, int64_t B, int64_t T, Precision precision, Recompute recompute,
                        const LoraOptions& lora) {
    LlamaActs acts;
    size_t bytes = 0;
    visit_llama_acts(
        cfg, B, T, precision, recompute, lora, acts,
        [&](int64_t n, auto*& slot) { bytes += n > 0 ? Arena::bytes_for(n * sizeof(*slot)) : 0; },
        [](auto*&, auto*) {});
    return bytes;
}

LlamaActs plan_llama_acts(const LlamaConfig& cfg, int64_t B, int64_t T, Precision precision, Recompute recompute,
                          const LoraOptions& lora, Arena& arena) {
    const size_t bytes = llama_acts_bytes(cfg, B, T, precision, recompute, lora);
    arena.replan(bytes);
    LlamaActs acts;
    visit_llama_acts(
        cfg, B, T, precision, recompute, lora, acts,
        [&](int64_t n, auto*& slot) {
            using T_ = std::remove_reference_t<decltype(*slot)>;
            slot = n > 0 ? arena.alloc<T_>(n) : nullptr;
        },
        [](auto*& slot, auto* from) { slot = from; });
    return acts;
}

}  // namespace lmforge
