#include "model/gpt2_acts.h"

namespace lmforge {

namespace {

// Calls fn(numel, slot) for every activation buffer.
template <class Fn>
void visit_gpt2_acts(const Gpt2Config& cfg, int64_t B, int64_t T, Gpt2Acts& a, Fn&& fn) {
    const int64_t N = B * T, C = cfg.n_embd;
    fn(N * C, a.encoded);
    a.layers.resize(cfg.n_layer);
    for (Gpt2LayerActs& l : a.layers) {
        fn(N * C, l.ln1);
        fn(N, l.ln1_mean);
        fn(N, l.ln1_rstd);
        fn(N * 3 * C, l.qkv);
        fn(N * C, l.atty);
        fn(B * cfg.n_head * T, l.att_lse);
        fn(N * C, l.attproj);
        fn(N * C, l.res2);
        fn(N * C, l.ln2);
        fn(N, l.ln2_mean);
        fn(N, l.ln2_rstd);
        fn(N * 4 * C, l.fch);
        fn(N * 4 * C, l.fch_gelu);
        fn(N * C, l.fcproj);
        fn(N * C, l.res3);
    }
    fn(N * C, a.lnf);
    fn(N, a.lnf_mean);
    fn(N, a.lnf_rstd);
    fn(N * cfg.padded_vocab(), a.logits);
    fn(N, a.losses);
    fn(N, a.lse);
    fn(N * C, a.dres);
    fn(N * C, a.dln);
    fn(N * C, a.datty);
    fn(N * 3 * C, a.dqkv);
    fn(N * 4 * C, a.dfch_gelu);
    fn(N * 4 * C, a.dfch);
}

}  // namespace

Gpt2Acts plan_gpt2_acts(const Gpt2Config& cfg, int64_t B, int64_t T, Arena& arena) {
    Gpt2Acts acts;
    size_t bytes = 0;
    visit_gpt2_acts(cfg, B, T, acts,
                    [&](int64_t n, float*&) { bytes += Arena::bytes_for(n * sizeof(float)); });
    arena = Arena(bytes);
    visit_gpt2_acts(cfg, B, T, acts, [&](int64_t n, float*& slot) { slot = arena.alloc<float>(n); });
    return acts;
}

}  // namespace lmforge
