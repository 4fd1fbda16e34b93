#include "model/bert_acts.h"

#include <algorithm>
#include <type_traits>

#include "kernels/lm_head_loss.h"

namespace lmforge {

namespace {

// Calls fn(numel, slot) for every buffer (numel 0 leaves it null).
template <class Fn>
void visit_bert_acts(const BertConfig& cfg, int64_t B, int64_t T, Precision precision, bool head_one_pass, BertActs& a,
                     Fn&& fn) {
    const int64_t N = B * T, H = cfg.hidden, I = cfg.intermediate, L = cfg.num_labels;
    const int64_t h = precision == Precision::Bf16 ? 1 : 0, f = 1 - h;  // bf16 only in mixed precision
    const int64_t mlm = L == 0 ? 1 : 0, cls = 1 - mlm;
    fn(N * H, a.embedded);
    fn(N * H, a.x0);
    fn(N, a.x0_mean);
    fn(N, a.x0_rstd);
    fn(h * N * H, a.x0_h);
    a.layers.resize(cfg.n_layer);
    for (BertLayerActs& l : a.layers) {
        fn(f * N * 3 * H, l.qkv);
        fn(N * H, l.atty);
        fn(B * cfg.n_head * T, l.att_lse);
        fn(N * H, l.res1);
        fn(N * H, l.h1);
        fn(N, l.h1_mean);
        fn(N, l.h1_rstd);
        fn(f * N * I, l.inter);
        fn(f * N * I, l.gelu);
        fn(N * H, l.res2);
        fn(N * H, l.out);
        fn(N, l.out_mean);
        fn(N, l.out_rstd);
        fn(h * N * 3 * H, l.qkv_h);
        fn(h * N * H, l.atty_h);
        fn(h * N * H, l.h1_h);
        fn(h * N * I, l.inter_h);
        fn(h * N * I, l.gelu_h);
        fn(h * N * H, l.out_h);
    }
    fn(N * H, a.proj);
    fn(cls * B * H, a.cls_in);
    fn(cls * B * H, a.pooled);
    fn(B * L, a.class_logits);
    fn(cls * B, a.class_losses);
    for (float** slot : {&a.mlm_in, &a.mlm_t, &a.mlm_g, &a.mlm_z}) fn(mlm * N * H, *slot);
    for (float** slot : {&a.mlm_mean, &a.mlm_rstd, &a.mlm_losses, &a.mlm_lse, &a.mlm_max, &a.target_logit}) {
        fn(mlm * N, *slot);
    }
    // The decoder's scratch: one vocabulary chunk of all rows (forward, backward), and one block
    // of rows with all the vocabulary if training takes the one pass (lm_head_loss.h).
    const int64_t head_scratch = mlm * kernels::lm_head_scratch(N, cfg.vocab_size, head_one_pass);
    fn(head_scratch, a.logits_chunk);
    for (uint16_t** slot : {&a.mlm_in_h, &a.mlm_g_h, &a.mlm_z_h}) fn(h * mlm * N * H, *slot);
    fn(h * mlm * kernels::lm_head_dlogits_scratch(N, cfg.vocab_size, head_one_pass, true), a.dlogits_chunk_h);
    fn(mlm * N, a.mlm_targets);
    fn(mlm * N, a.mlm_rows);
    for (float** slot : {&a.dx, &a.dres, &a.dtmp, &a.datty, &a.dhead_a, &a.dhead_b}) fn(N * H, *slot);
    fn(N * 3 * H, a.dqkv);
    fn(N * I, a.dgelu);
    fn(N * I, a.dinter);
    fn(h * N * std::max(3 * H, I), a.dout_h);
}

}  // namespace

size_t bert_acts_bytes(const BertConfig& cfg, int64_t B, int64_t T, Precision precision, bool head_one_pass) {
    BertActs acts;
    size_t bytes = 0;
    visit_bert_acts(cfg, B, T, precision, head_one_pass, acts,
                    [&](int64_t n, auto*& slot) { bytes += n > 0 ? Arena::bytes_for(n * sizeof(*slot)) : 0; });
    return bytes;
}

BertActs plan_bert_acts(const BertConfig& cfg, int64_t B, int64_t T, Precision precision, bool head_one_pass,
                        Arena& arena) {
    const size_t bytes = bert_acts_bytes(cfg, B, T, precision, head_one_pass);
    arena.replan(bytes);
    BertActs acts;
    visit_bert_acts(cfg, B, T, precision, head_one_pass, acts, [&](int64_t n, auto*& slot) {
        using T_ = std::remove_reference_t<decltype(*slot)>;
        slot = n > 0 ? arena.alloc<T_>(n) : nullptr;
    });
    return acts;
}

}  // namespace lmforge
