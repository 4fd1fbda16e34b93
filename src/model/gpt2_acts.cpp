#include "model/gpt2_acts.h"

#include <type_traits>

namespace lmforge {

namespace {

// Calls fn(numel, slot) for every activation buffer (slot a float* or a uint16_t* for
// bfloat16; numel 0 leaves it null).
template <class Fn>
void visit_gpt2_acts(const Gpt2Config& cfg, int64_t B, int64_t T, Precision precision, Gpt2Acts& a, Fn&& fn) {
    const int64_t N = B * T, C = cfg.n_embd;
    const int64_t h = precision == Precision::Bf16 ? 1 : 0;  // bf16 buffers only in mixed precision
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
        fn(h * N * C, l.ln1_h);
        fn(h * N * C, l.atty_h);
        fn(h * N * C, l.ln2_h);
        fn(h * N * 4 * C, l.fch_gelu_h);
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
    fn(h * N * C, a.lnf_h);
    fn(h * N * cfg.padded_vocab(), a.dlogits_h);
    fn(h * N * 4 * C, a.dout_h);
}

}  // namespace

Gpt2Acts plan_gpt2_acts(const Gpt2Config& cfg, int64_t B, int64_t T, Precision precision, Arena& arena) {
    Gpt2Acts acts;
    size_t bytes = 0;
    visit_gpt2_acts(cfg, B, T, precision, acts,
                    [&](int64_t n, auto*& slot) { bytes += n > 0 ? Arena::bytes_for(n * sizeof(*slot)) : 0; });
    arena = Arena(bytes);
    visit_gpt2_acts(cfg, B, T, precision, acts, [&](int64_t n, auto*& slot) {
        using T_ = std::remove_reference_t<decltype(*slot)>;
        slot = n > 0 ? arena.alloc<T_>(n) : nullptr;
    });
    return acts;
}

}  // namespace lmforge
