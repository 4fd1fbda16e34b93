#include "kernels/lm_head_loss.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "core/aligned_buffer.h"
#include "core/error.h"
#include "kernels/bf16.h"
#include "kernels/fast_math.h"
#include "kernels/matmul.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

constexpr int64_t kChunkBytes = int64_t{8} << 20;  // 4-16 MiB measured alike on config B
constexpr int64_t kBlockBytes = int64_t{64} << 20;  // lm_head_loss_train's logits block
// Below this many rows a block's GEMMs turn skinny: Llama 3's head (V = 128256, C = 2048, bf16,
// Zen 5, 2 threads) computes dx at 567 GFLOP/s with 128 rows, 707 with 256 and 700 with 512.
constexpr int64_t kWideRows = 256;

void run(backend::Gemm& gemm, const backend::GemmShape& s, const float* a, const float* b, float* c,
         const float* bias = nullptr) {
    gemm.run(s, a, b, c, bias);
}
void run(backend::Gemm& gemm, const backend::GemmShape& s, const bf16* a, const bf16* b, float* c,
         const float* bias = nullptr) {
    gemm.run_bf16(s, a, b, c, bias);
}

// C (M, N) = or += op(A) · B into bf16: the fp32 sums a block of rows at a time in c.sums,
// each rounded once (with C's own value when accumulating).
void run_into_bf16(backend::Gemm& gemm, const backend::GemmShape& s, const bf16* a, const bf16* b, GradOut c) {
    const int64_t rows = c.sums_floats / s.N, lda = s.stored_lda();
    if (rows < 1) throw Error(fmt::format("{} floats of gradient sums hold no row of {}", c.sums_floats, s.N));
    for (int64_t m0 = 0; m0 < s.M; m0 += rows) {
        backend::GemmShape block = s;
        block.M = std::min(rows, s.M - m0);
        block.lda = lda;
        block.accumulate = false;
        gemm.run_bf16(block, a + (s.trans_a ? m0 : m0 * lda), b, c.sums);
        bf16* out = c.bf16 + m0 * s.N;
        const float* sums = c.sums;
        const int64_t n = block.M * s.N;
        if (s.accumulate) {
#pragma omp parallel for simd schedule(static)
            for (int64_t i = 0; i < n; i++) out[i] = lmforge::to_bf16(from_bf16(out[i]) + sums[i]);
        } else {
#pragma omp parallel for simd schedule(static)
            for (int64_t i = 0; i < n; i++) out[i] = lmforge::to_bf16(sums[i]);
        }
    }
}

// A weight gradient's GEMM, into fp32 or (with bf16 inputs) bf16.
template <class In>
void run_grad(backend::Gemm& gemm, const backend::GemmShape& s, const In* a, const In* b, GradOut c) {
    if (c.f32 != nullptr) {
        run(gemm, s, a, b, c.f32);
    } else if constexpr (std::is_same_v<In, bf16>) {
        run_into_bf16(gemm, s, a, b, c);
    } else {
        throw Error("bf16 gradients need bf16 GEMM inputs");
    }
}

// Zero gradients for the padded rows V..Vp-1 of the embedding.
void zero_padding(const LmHeadLossShape& s, GradOut dwte) { (dwte + s.V * s.C).zero((s.Vp - s.V) * s.C); }

// logits (N, nc) = x · wte[c0 : c0+nc]ᵀ + bias[c0 : c0+nc]
template <class In>
void chunk_logits(backend::Gemm& gemm, const LmHeadLossShape& s, int64_t c0, int64_t nc, const In* x, const In* wte,
                  const float* bias, float* logits) {
    run(gemm, {.M = s.N, .N = nc, .K = s.C, .trans_b = true}, x, wte + c0 * s.C, logits,
        bias != nullptr ? bias + c0 : nullptr);
}

// Writes g(j) for j in [0, n) as In to drow, which may lie over the fp32 row that g reads
// (the one pass's bf16 dlogits in place: a row's n values at the start of its own floats).
// Each piece goes through a local buffer, so its copy lands only on floats already read.
// Returns the sum of the g(j), taken in fp32 before rounding.
template <class In, class G>
float store_row(In* drow, int64_t n, G&& g) {
    constexpr int64_t kPiece = 512;
    In piece[kPiece];
    float sum = 0.0f;
    for (int64_t j0 = 0; j0 < n; j0 += kPiece) {
        const int64_t m = std::min(kPiece, n - j0);
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < m; j++) {
            const float v = g(j0 + j);
            piece[j] = float_to<In>(v);
            sum += v;
        }
        std::memcpy(drow + j0, piece, sizeof(In) * static_cast<size_t>(m));
    }
    return sum;
}

// A row's n dlogits: g(j) (read from row[j] alone) written as In to drow (which may lie over
// row: store_row) and, when keep_fp32, also in fp32 over row (for dbias's column sums in mixed
// precision; drow is then elsewhere); column target (−1: none here) gets at_target instead.
template <class In, class G>
void write_dlogits(float* row, In* drow, int64_t n, int64_t target, float at_target, bool keep_fp32, G&& g) {
    if (keep_fp32) {
#pragma omp simd
        for (int64_t j = 0; j < n; j++) {
            const float v = g(j);
            row[j] = v;
            drow[j] = float_to<In>(v);
        }
        if (target >= 0) row[target] = at_target;
    } else {
        store_row(drow, n, g);
    }
    if (target >= 0) drow[target] = float_to<In>(at_target);
}

// One row's dlogits over vocabulary columns [c0, c0 + nc): (softmax − one-hot(t)) · dloss,
// from the row's logits and log-sum-exp; zero where t is ignored (write_dlogits).
template <class In>
void row_dlogits(float* row, In* drow, int64_t c0, int64_t nc, int64_t t, float lse, float dloss, bool keep_fp32) {
    const float scale = t == kIgnoreIndex ? 0.0f : dloss;
    const bool here = t >= c0 && t < c0 + nc;
    const float at_target = here ? (fast_exp(row[t - c0] - lse) - 1.0f) * scale : 0.0f;
    write_dlogits(row, drow, nc, here ? t - c0 : -1, at_target, keep_fp32,
                  [&](int64_t j) { return fast_exp_nonpositive(row[j] - lse) * scale; });
}

// Σ exp(row[j] − m) over a row of n logits whose maximum is m.
inline float exp_sum(const float* row, int64_t n, float m) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; j++) sum += fast_exp_nonpositive(row[j] - m);
    return sum;
}

// The same, with each exp(row[j] − m) written over row[j]: row_dlogits_from_exps then scales
// them, where exp(row[j] − lse) would take each exponential again.
inline float exps_in_place(float* row, int64_t n, float m) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; j++) {
        const float e = fast_exp_nonpositive(row[j] - m);
        row[j] = e;
        sum += e;
    }
    return sum;
}

// row_dlogits over a whole row (V columns) from its exponentials against the row's maximum
// (exps_in_place) and their sum: softmax_j = exps[j] / sum.
template <class In>
void row_dlogits_from_exps(float* exps, In* drow, int64_t V, int64_t t, float sum, float dloss, bool keep_fp32) {
    const float scale = t == kIgnoreIndex ? 0.0f : dloss, k = scale / sum;
    const float at_target = t != kIgnoreIndex ? exps[t] * k - scale : 0.0f;
    write_dlogits(exps, drow, V, t != kIgnoreIndex ? t : -1, at_target, keep_fp32,
                  [&](int64_t j) { return exps[j] * k; });
}

// One row's dlogits with distillation's soft term (SoftTargets), over all V columns, from its
// logits, maximum m and log-sum-exp; returns T² · KL. Zero where t is ignored.
template <class In>
float row_soft_dlogits(float* row, In* drow, int64_t V, int64_t t, float m, float lse, float dloss,
                       const SoftTargets& soft, const float* logp, bool keep_fp32) {
    const float T = soft.temperature, inv_t = 1.0f / T;
    const float hard = t == kIgnoreIndex ? 0.0f : dloss * soft.task_weight;
    const float gentle = t == kIgnoreIndex ? 0.0f : dloss * soft.kl_weight * T;
    float sum_t = 0.0f;
#pragma omp simd reduction(+ : sum_t)
    for (int64_t j = 0; j < V; j++) sum_t += fast_exp((row[j] - m) * inv_t);
    const float lse_t = m * inv_t + std::log(sum_t);
    float kl = 0.0f;
#pragma omp simd reduction(+ : kl)
    for (int64_t j = 0; j < V; j++) {
        const float p = fast_exp(logp[j]);
        kl += p > 0.0f ? p * (logp[j] - (row[j] * inv_t - lse_t)) : 0.0f;  // 0 · log 0 = 0
    }
    const float at_target = t == kIgnoreIndex ? 0.0f : row[t];
    const auto g = [&](int64_t j) {
        return hard * fast_exp(row[j] - lse) + gentle * (fast_exp(row[j] * inv_t - lse_t) - fast_exp(logp[j]));
    };
    if (keep_fp32) {
#pragma omp simd
        for (int64_t j = 0; j < V; j++) {
            row[j] = g(j);
            drow[j] = float_to<In>(row[j]);
        }
    } else {
        store_row(drow, V, g);
    }
    if (t != kIgnoreIndex) {
        const float g = hard * (fast_exp(at_target - lse) - 1.0f) +
                        gentle * (fast_exp(at_target * inv_t - lse_t) - fast_exp(logp[t]));
        if (keep_fp32) row[t] = g;
        drow[t] = float_to<In>(g);
    }
    return t == kIgnoreIndex ? 0.0f : T * T * kl;
}

// A shape's chunk or row block must be positive, or the loops over them never end.
void check_blocks(int64_t size, const char* what) {
    if (size <= 0) throw Error(fmt::format("LM head: {} = {} must be positive", what, size));
}

}  // namespace

int64_t lm_head_chunk(int64_t N, int64_t V) {
    const int64_t columns = kChunkBytes / (static_cast<int64_t>(sizeof(float)) * std::max<int64_t>(N, 1));
    return std::min(V, std::max<int64_t>(64, columns / 64 * 64));
}

template <class In>
void lm_head_loss_forward(backend::Gemm& gemm, const LmHeadLossShape& s, float* losses, float* lse, const In* x,
                          const In* wte, const float* bias, const int32_t* targets, float* logits_chunk,
                          float* target_logit, float* row_max) {
    check_blocks(s.chunk, "chunk");
    // Running per row: the maximum (in lse), the sum of exp(logit - maximum) (in losses) and
    // the target's logit.
    std::fill_n(lse, s.N, -std::numeric_limits<float>::infinity());
    std::fill_n(losses, s.N, 0.0f);
    std::fill_n(target_logit, s.N, 0.0f);
    for (int64_t c0 = 0; c0 < s.V; c0 += s.chunk) {
        const int64_t nc = std::min(s.V, c0 + s.chunk) - c0;
        chunk_logits(gemm, s, c0, nc, x, wte, bias, logits_chunk);
#pragma omp parallel for schedule(static)
        for (int64_t n = 0; n < s.N; n++) {
            const float* row = logits_chunk + n * nc;
            float block_max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : block_max)
            for (int64_t j = 0; j < nc; j++) block_max = row[j] > block_max ? row[j] : block_max;  // vectorises; std::max does not
            const float m_new = std::max(lse[n], block_max);
            const float sum = exp_sum(row, nc, m_new);
            losses[n] = losses[n] * fast_exp(lse[n] - m_new) + sum;  // exp(-inf) = 0 on the first chunk
            lse[n] = m_new;
            const int64_t t = targets[n];
            if (t >= c0 && t < c0 + nc) target_logit[n] = row[t - c0];
        }
    }
    if (row_max != nullptr) std::copy_n(lse, s.N, row_max);  // still the running maximum
    for (int64_t n = 0; n < s.N; n++) {
        lse[n] += std::log(losses[n]);
        losses[n] = targets[n] == kIgnoreIndex ? 0.0f : lse[n] - target_logit[n];
    }
}

int64_t lm_head_rows(int64_t N, int64_t V) {
    const int64_t budget = kBlockBytes / (static_cast<int64_t>(sizeof(float)) * std::max<int64_t>(V, 1)) / 64 * 64;
    const int64_t wide = std::max(budget, kWideRows);
    // One block where all rows fit: config A's head (256 rows, bf16, Zen 5, 2 threads) took
    // 81-87 ms a step in two blocks of 128, 74-78 in one, for 26 MiB more peak RSS.
    return std::max<int64_t>(std::min(wide, N), 1);
}

// With bf16 GEMMs on AMX tiles, the two chunked passes beat the one pass despite their extra
// logits GEMM: their GEMMs are square-ish (N x chunk) where the one pass's weight gradient
// sums only s.rows deep and rereads all of dwte (fp32) once per block. Config B's head on 2
// threads (AMX): 249 against 353 ms per step. Everywhere else the GEMM saved wins: in fp32 (and
// bf16 widened to fp32) 832 against 940 ms; in bf16 on AVX512_BF16 (Zen 5) 340 against 385 ms
// on B, for 56 MiB more peak RSS.
bool lm_head_one_pass(const backend::Gemm& gemm, bool bf16_inputs) { return !bf16_inputs || !gemm.bf16_on_tiles(); }

int64_t lm_head_row_stride(int64_t V) {
    return round_up(V, static_cast<int64_t>(kAlignment / sizeof(float)));
}

int64_t lm_head_scratch(int64_t N, int64_t V, bool one_pass) {
    const int64_t chunked = N * lm_head_chunk(N, V);
    return one_pass ? std::max(chunked, lm_head_rows(N, V) * lm_head_row_stride(V)) : chunked;
}

int64_t lm_head_dlogits_scratch(int64_t N, int64_t V, bool one_pass, bool bias) {
    return one_pass && bias ? lm_head_scratch(N, V, one_pass) : N * lm_head_chunk(N, V);
}

template <class In>
void lm_head_loss_backward(backend::Gemm& gemm, const LmHeadLossShape& s, float* dx, GradOut dwte, float* dbias,
                           bool accumulate, const In* x, const In* wte, const float* bias, const float* lse,
                           const int32_t* targets, float dloss, float* logits_chunk, In* dlogits_chunk);

namespace {

// Row n of a frozen head's chunk at c0 (nc logits in row): its running maximum (in lse[n]) and
// sum of exponentials (in losses[n]) move on, the sum and dx's row rescaled where the maximum
// grows; the exponentials against the new maximum go to exps_row, the target's logit (if in the
// chunk) to target_logit[n].
template <class In>
void frozen_chunk_row(const float* row, In* exps_row, int64_t n, int64_t c0, int64_t nc, int64_t C, int64_t target,
                      float* losses, float* lse, float* dx, float* target_logit) {
    float block_max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : block_max)
    for (int64_t j = 0; j < nc; j++) block_max = row[j] > block_max ? row[j] : block_max;
    const float m = std::max(lse[n], block_max);
    if (m > lse[n] && c0 > 0) {
        const float shrink = fast_exp(lse[n] - m);
        losses[n] *= shrink;
        float* d = dx + n * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) d[c] *= shrink;
    }
    lse[n] = m;
    if (target >= c0 && target < c0 + nc) target_logit[n] = row[target - c0];
    losses[n] += store_row(exps_row, nc, [&](int64_t j) { return fast_exp_nonpositive(row[j] - m); });
}

// The end of a frozen head's pass, every row: its log-sum-exp and loss from the running maximum
// and sum, and dx = dloss · ((Σ exps · wte) / sum − wte[target]), 0 where the target is ignored.
template <class In>
void frozen_finish_rows(const LmHeadLossShape& s, float* losses, float* lse, float* dx, const In* wte,
                        const int32_t* targets, float dloss, const float* target_logit) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < s.N; n++) {
        const int64_t t = targets[n];
        const float sum = losses[n];
        lse[n] += std::log(sum);
        losses[n] = t == kIgnoreIndex ? 0.0f : lse[n] - target_logit[n];
        float* d = dx + n * s.C;
        if (t == kIgnoreIndex) {
            std::fill_n(d, s.C, 0.0f);
            continue;
        }
        const float scale = dloss / sum;
        const In* wt = wte + t * s.C;
#pragma omp simd
        for (int64_t c = 0; c < s.C; c++) d[c] = d[c] * scale - dloss * to_float(wt[c]);
    }
}

// A frozen head's training pass (lm_head_loss_train): each vocabulary chunk's logits, then
// their exponentials against each row's running maximum (over the logits, ld 2 · chunk in
// bf16), multiplied into dx at once. A row whose maximum grows has its sum and its dx rescaled
// first; at the end dx is divided by the row's sum and the target's −wte[t] added in fp32.
template <class In>
void frozen_head_loss(backend::Gemm& gemm, const LmHeadLossShape& s, float* losses, float* lse, float* dx,
                      const In* x, const In* wte, const int32_t* targets, float dloss, float* logits_chunk,
                      float* target_logit, float* row_max) {
    check_blocks(s.chunk, "chunk");
    // Running per row: the maximum (in lse), the sum of exp(logit − maximum) (in losses).
    std::fill_n(lse, s.N, -std::numeric_limits<float>::infinity());
    std::fill_n(losses, s.N, 0.0f);
    std::fill_n(target_logit, s.N, 0.0f);
    const int64_t ld = std::is_same_v<In, float> ? s.chunk : 2 * s.chunk;
    In* exps = reinterpret_cast<In*>(logits_chunk);
    for (int64_t c0 = 0; c0 < s.V; c0 += s.chunk) {
        const int64_t nc = std::min(s.V, c0 + s.chunk) - c0;
        run(gemm, {.M = s.N, .N = nc, .K = s.C, .trans_b = true, .ldc = s.chunk}, x, wte + c0 * s.C, logits_chunk);
#pragma omp parallel for schedule(static)
        for (int64_t n = 0; n < s.N; n++) {
            frozen_chunk_row(logits_chunk + n * s.chunk, exps + n * ld, n, c0, nc, s.C, targets[n], losses, lse, dx,
                             target_logit);
        }
        run(gemm, {.M = s.N, .N = s.C, .K = nc, .lda = ld, .accumulate = c0 > 0}, exps, wte + c0 * s.C, dx);
    }
    if (row_max != nullptr) std::copy_n(lse, s.N, row_max);
    frozen_finish_rows(s, losses, lse, dx, wte, targets, dloss, target_logit);
}

// Where the one pass puts each row n's figures: its loss, lse, target's logit and, if asked,
// maximum.
struct RowStats {
    float *losses, *lse, *target_logit, *row_max;
};

// Row n of the one pass, from its V logits (bias added) in row: its figures into st and its
// dlogits into drow. The soft term reads the logits again; otherwise the exponentials replace
// them.
template <class In>
void one_pass_row(float* row, In* drow, int64_t V, int64_t n, int64_t t, const RowStats& st, float dloss,
                  bool keep_fp32, const SoftTargets* soft) {
    float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < V; j++) m = row[j] > m ? row[j] : m;
    st.target_logit[n] = t == kIgnoreIndex ? 0.0f : row[t];
    const float sum = soft != nullptr ? exp_sum(row, V, m) : exps_in_place(row, V, m);
    st.lse[n] = m + std::log(sum);
    if (st.row_max != nullptr) st.row_max[n] = m;
    st.losses[n] = t == kIgnoreIndex ? 0.0f : st.lse[n] - st.target_logit[n];
    if (soft != nullptr) {
        soft->kl[n] = row_soft_dlogits(row, drow, V, t, m, st.lse[n], dloss, *soft, soft->logp + n * V, keep_fp32);
    } else {
        row_dlogits_from_exps(row, drow, V, t, sum, dloss, keep_fp32);
    }
}

}  // namespace

template <class In>
void lm_head_loss_train(backend::Gemm& gemm, const LmHeadLossShape& s, float* losses, float* lse, float* dx,
                        GradOut dwte, float* dbias, bool accumulate, const In* x, const In* wte, const float* bias,
                        const int32_t* targets, float dloss, float* logits_block, In* dlogits_block,
                        float* target_logit, float* row_max, const SoftTargets* soft) {
    // This level's own forward and backward (kernels/dispatch.cpp would take the long way).
    namespace level = LMFORGE_ISA_NAMESPACE;
    if (!dwte && dbias == nullptr && soft == nullptr) {
        frozen_head_loss(gemm, s, losses, lse, dx, x, wte, targets, dloss, logits_block, target_logit, row_max);
        return;
    }
    // A frozen head (dwte null) has no weight-gradient GEMM to make the one pass lose.
    const bool one_pass = level::lm_head_one_pass(gemm, !std::is_same_v<In, float>) || !dwte;
    if (!one_pass && soft == nullptr) {
        level::lm_head_loss_forward(gemm, s, losses, lse, x, wte, bias, targets, logits_block, target_logit,
                                    row_max);
        level::lm_head_loss_backward(gemm, s, dx, dwte, dbias, accumulate, x, wte, bias, lse, targets, dloss,
                                     logits_block, dlogits_block);
        return;
    }
    // Rows lie lm_head_row_stride(V) floats apart, each on a cache line; with a bias gradient
    // they stay packed, as bias_backward reads them.
    const int64_t stride = dbias != nullptr ? s.V : lm_head_row_stride(s.V);
    // The chunked passes' scratch (s.N · s.chunk) holds this many whole rows.
    const int64_t rows = one_pass ? s.rows : std::min(s.N, std::max<int64_t>(1, s.N * s.chunk / stride));
    check_blocks(rows, "rows");
    const bool keep_fp32 = dbias != nullptr && !std::is_same_v<In, float>;
    const float* dlogits_fp32 = logits_block;
    if constexpr (std::is_same_v<In, float>) dlogits_fp32 = dlogits_block;
    // Mixed precision without a bias writes the bf16 dlogits over the block's own logits, each
    // row's at the start of its floats (rows 2 · stride values apart): no second block of scratch.
    const bool in_place = !std::is_same_v<In, float> && !keep_fp32;
    In* dlogits = in_place ? reinterpret_cast<In*>(logits_block) : dlogits_block;
    const int64_t ld = in_place ? 2 * stride : stride;
    if (dbias != nullptr && !accumulate) std::fill_n(dbias, s.V, 0.0f);
    const RowStats stats{losses, lse, target_logit, row_max};
    for (int64_t r0 = 0; r0 < s.N; r0 += rows) {
        const int64_t nr = std::min(s.N, r0 + rows) - r0;
        const In* xb = x + r0 * s.C;
        run(gemm, {.M = nr, .N = s.V, .K = s.C, .trans_b = true, .ldc = stride}, xb, wte, logits_block, bias);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < nr; i++) {
            one_pass_row(logits_block + i * stride, dlogits + i * ld, s.V, r0 + i, targets[r0 + i], stats, dloss,
                         keep_fp32, soft);
        }
        if (dbias != nullptr) bias_backward(dbias, dlogits_fp32, nr, s.V);
        run(gemm, {.M = nr, .N = s.C, .K = s.V, .lda = ld}, dlogits, wte, dx + r0 * s.C);
        if (dwte) {
            const bool add = accumulate || r0 > 0;
            run_grad(gemm, {.M = s.V, .N = s.C, .K = nr, .trans_a = true, .lda = ld, .accumulate = add}, dlogits, xb,
                     dwte);
        }
    }
    if (!accumulate && dwte) zero_padding(s, dwte);
}

template <class In>
void lm_head_loss_backward(backend::Gemm& gemm, const LmHeadLossShape& s, float* dx, GradOut dwte, float* dbias,
                           bool accumulate, const In* x, const In* wte, const float* bias, const float* lse,
                           const int32_t* targets, float dloss, float* logits_chunk, In* dlogits_chunk) {
    check_blocks(s.chunk, "chunk");
    // In bf16, dbias's column sums read fp32 dlogits, written back over the logits as they go.
    const bool keep_fp32 = dbias != nullptr && !std::is_same_v<In, float>;
    const float* dlogits_fp32 = logits_chunk;
    if constexpr (std::is_same_v<In, float>) dlogits_fp32 = dlogits_chunk;
    if (dbias != nullptr && !accumulate) std::fill_n(dbias, s.V, 0.0f);
    for (int64_t c0 = 0; c0 < s.V; c0 += s.chunk) {
        const int64_t nc = std::min(s.V, c0 + s.chunk) - c0;
        chunk_logits(gemm, s, c0, nc, x, wte, bias, logits_chunk);
#pragma omp parallel for schedule(static)
        for (int64_t n = 0; n < s.N; n++) {
            row_dlogits(logits_chunk + n * nc, dlogits_chunk + n * nc, c0, nc, targets[n], lse[n], dloss, keep_fp32);
        }
        if (dbias != nullptr) bias_backward(dbias + c0, dlogits_fp32, s.N, nc);
        run(gemm, {.M = s.N, .N = s.C, .K = nc, .accumulate = c0 > 0}, dlogits_chunk, wte + c0 * s.C, dx);
        if (dwte) {
            run_grad(gemm, {.M = nc, .N = s.C, .K = s.N, .trans_a = true, .accumulate = accumulate}, dlogits_chunk, x,
                     dwte + c0 * s.C);
        }
    }
    if (!accumulate && dwte) zero_padding(s, dwte);
}

template void lm_head_loss_forward<float>(backend::Gemm&, const LmHeadLossShape&, float*, float*, const float*,
                                          const float*, const float*, const int32_t*, float*, float*, float*);
template void lm_head_loss_forward<bf16>(backend::Gemm&, const LmHeadLossShape&, float*, float*, const bf16*,
                                         const bf16*, const float*, const int32_t*, float*, float*, float*);
template void lm_head_loss_train<float>(backend::Gemm&, const LmHeadLossShape&, float*, float*, float*, GradOut,
                                        float*, bool, const float*, const float*, const float*, const int32_t*, float,
                                        float*, float*, float*, float*, const SoftTargets*);
template void lm_head_loss_train<bf16>(backend::Gemm&, const LmHeadLossShape&, float*, float*, float*, GradOut, float*,
                                       bool, const bf16*, const bf16*, const float*, const int32_t*, float, float*,
                                       bf16*, float*, float*, const SoftTargets*);
template void lm_head_loss_backward<float>(backend::Gemm&, const LmHeadLossShape&, float*, GradOut, float*, bool,
                                           const float*, const float*, const float*, const float*, const int32_t*,
                                           float, float*, float*);
template void lm_head_loss_backward<bf16>(backend::Gemm&, const LmHeadLossShape&, float*, GradOut, float*, bool,
                                          const bf16*, const bf16*, const float*, const float*, const int32_t*, float,
                                          float*, bf16*);

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
