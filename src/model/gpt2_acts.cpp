#include "model/gpt2_acts.h"

#include <algorithm>
#include <type_traits>

#include <fmt/format.h>

#include "core/error.h"

namespace lmforge {

namespace {

// Calls fn(numel, slot) for every activation buffer (slot a float* or a uint16_t* for
// bfloat16; numel 0 leaves it null), then share(slot, from) for a layer's buffer that is the
// same as layer 0's.
template <class Fn, class Share>
void visit_gpt2_acts(const Gpt2Config& cfg, int64_t B, int64_t T, Precision precision, Recompute recompute,
                     Gpt2Acts& a, Fn&& fn, Share&& share) {
    const int64_t N = B * T, C = cfg.n_embd;
    const int64_t h = precision == Precision::Bf16 ? 1 : 0;  // bf16 buffers only in mixed precision
    const int64_t f = 1 - h;                                   // fp32 GEMM inputs only in fp32
    fn(N * C, a.encoded);
    a.layers.resize(cfg.n_layer);
    for (size_t i = 0; i < a.layers.size(); i++) {
        Gpt2LayerActs& l = a.layers[i];
        const Gpt2LayerActs& first = a.layers[0];
        // own(slot, n): a buffer of this layer; kept(slot, n, keep): own if this mode keeps it,
        // else layer 0's.
        const auto own = [&](auto*& slot, int64_t n) { fn(n, slot); };
        const auto kept = [&](auto*& slot, auto* const& in_first, int64_t n, bool keep) {
            if (keep || i == 0) {
                fn(n, slot);
            } else {
                share(slot, in_first);
            }
        };
        const bool keep_block = recompute != Recompute::Block;
        const bool keep_pointwise = recompute == Recompute::None;  // GELU and layernorm outputs
        kept(l.ln1, first.ln1, f * N * C, keep_pointwise);
        kept(l.ln1_mean, first.ln1_mean, N, keep_block);
        kept(l.ln1_rstd, first.ln1_rstd, N, keep_block);
        kept(l.qkv, first.qkv, f * N * 3 * C, keep_block);
        kept(l.atty, first.atty, N * C, keep_block);
        kept(l.att_lse, first.att_lse, B * cfg.n_head * T, keep_block);
        kept(l.res2, first.res2, N * C, keep_block);
        kept(l.ln2, first.ln2, f * N * C, keep_pointwise);
        kept(l.ln2_mean, first.ln2_mean, N, keep_block);
        kept(l.ln2_rstd, first.ln2_rstd, N, keep_block);
        kept(l.fch, first.fch, f * N * 4 * C, keep_block);
        kept(l.fch_gelu, first.fch_gelu, f * N * 4 * C, keep_pointwise);
        own(l.res3, N * C);
        kept(l.ln1_h, first.ln1_h, h * N * C, keep_pointwise);
        kept(l.qkv_h, first.qkv_h, h * N * 3 * C, keep_block);
        kept(l.ln2_h, first.ln2_h, h * N * C, keep_pointwise);
        kept(l.fch_h, first.fch_h, h * N * 4 * C, keep_block);
        kept(l.fch_gelu_h, first.fch_gelu_h, h * N * 4 * C, keep_pointwise);
    }
    fn(f * N * C, a.lnf);
    fn(N, a.lnf_mean);
    fn(N, a.lnf_rstd);
    fn(N * C, a.dres);
    fn(f * N * C, a.dln);  // in mixed precision at dfch: plan_gpt2_acts
    fn(N * 4 * C, a.dfch);  // proj, datty, dqkv and atty_h too: plan_gpt2_acts
    fn(h * N * C, a.lnf_h);
    fn(h * N * 4 * C, a.dout_h);
    fn(h * C, a.dres_sums);
}

}  // namespace

Recompute parse_recompute(const std::string& name) {
    if (name == "none") return Recompute::None;
    if (name == "gelu") return Recompute::Gelu;
    if (name == "block") return Recompute::Block;
    throw InputError(fmt::format("unknown recompute mode \"{}\"", name), "use none, gelu or block");
}

const char* recompute_name(Recompute r) {
    switch (r) {
        case Recompute::None: return "none";
        case Recompute::Gelu: return "gelu";
        case Recompute::Block: return "block";
    }
    return "?";
}

size_t gpt2_acts_bytes(const Gpt2Config& cfg, int64_t B, int64_t T, Precision precision, Recompute recompute) {
    Gpt2Acts acts;
    size_t bytes = 0;
    visit_gpt2_acts(
        cfg, B, T, precision, recompute, acts,
        [&](int64_t n, auto*& slot) { bytes += n > 0 ? Arena::bytes_for(n * sizeof(*slot)) : 0; },
        [](auto*&, auto*) {});
    return bytes;
}

Gpt2Acts plan_gpt2_acts(const Gpt2Config& cfg, int64_t B, int64_t T, Precision precision, Recompute recompute,
                        Arena& arena) {
    const size_t bytes = gpt2_acts_bytes(cfg, B, T, precision, recompute);
    arena.replan(bytes);
    Gpt2Acts acts;
    visit_gpt2_acts(
        cfg, B, T, precision, recompute, acts,
        [&](int64_t n, auto*& slot) {
            using T_ = std::remove_reference_t<decltype(*slot)>;
            slot = n > 0 ? arena.alloc<T_>(n) : nullptr;
        },
        [](auto*& slot, auto* from) { slot = from; });
    // dfch's room, in turns (gpt2_acts.h).
    const int64_t N = B * T, C = cfg.n_embd;
    acts.proj = acts.dfch;
    acts.datty = acts.dfch;
    acts.dqkv = acts.dfch + N * C;
    if (precision == Precision::Bf16) {
        acts.atty_h = reinterpret_cast<uint16_t*>(acts.dqkv);
        acts.dln = acts.dfch;
    }
    return acts;
}

}  // namespace lmforge
