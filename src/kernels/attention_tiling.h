// What the two attention kernels share (kernels/attention.cpp on fp32 tiles, attention_bf16.cpp
// on bf16 dot products): how queries are tiled and keys blocked, which keys a row sees, and the
// softmax's per-row arithmetic, which stays fp32 in both.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <vector>

#include "backend/jit_room.h"
#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/fast_math.h"

namespace lmforge::kernels::attention_tiling {

// Query rows per tile, and keys per block. Longer blocks make fewer, longer GEMMs: config C's
// forward (T = 256, one block) took 9.0 ms where 64-key blocks took 11.7 (Zen 3, 2 threads);
// backward measured the same, within noise, with blocks of 64 to 256. A block is whole tiles,
// so a tile's first row already sees the first key of each block it meets: no row of a block is
// wholly masked, and the online softmax never starts from a row of −∞.
constexpr int64_t kTile = 64;
constexpr int64_t kKeyBlock = 256;
static_assert(kKeyBlock % kTile == 0);

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Keys 0..end-1 are visible to query i; end is i + 1 when causal, and never past the
// sequence's padding.
inline int64_t key_end(const AttentionMask& mask, int64_t i, int64_t key_len) {
    return mask.causal ? std::min(i + 1, key_len) : key_len;
}
// How many keys of the block starting at j0 (nk keys) query i sees.
inline int64_t visible_keys(const AttentionMask& mask, int64_t i, int64_t key_len, int64_t j0, int64_t nk) {
    return std::clamp<int64_t>(key_end(mask, i, key_len) - j0, 0, nk);
}
inline int64_t key_len_of(const AttentionMask& mask, int64_t b, int64_t T) {
    return mask.key_len != nullptr ? mask.key_len[b] : T;
}

// n elements of scratch that a thread of a parallel region allocates for itself: glibc serves
// each thread from an arena of its own, so the threads' blocks lie apart (one allocation for
// all, the threads' parts side by side, made config C's bf16 step 2.5% slower on a Zen 5 with 2
// threads). An exception must not leave the region, so a failed allocation is noted in
// `failed` and null returned; throw_if_failed reports it after the region.
template <class T>
T* thread_scratch(std::vector<T>& v, size_t n, std::atomic<bool>& failed) {
    try {
        v.resize(n);
        return v.data();
    } catch (const std::bad_alloc&) {
        failed = true;
        return nullptr;
    }
}

inline void throw_if_failed(const std::atomic<bool>& failed) {
    if (failed) throw Error("attention: out of memory for its scratch blocks", backend::kOutOfMemoryHint);
}

// The row loops below run over the visible keys rounded up to whole vectors of 16, the keys
// hidden inside the last vector set to −∞ (e^−∞ = 0), and fill the rest with 0. Selecting the
// hidden keys away inside the loop made GCC split it at nvalid and add the zeros one at a time
// (12% of a bf16 forward); stopping at nvalid left a scalar remainder of exps.
inline int64_t vector_end(int64_t nvalid, int64_t nk) { return std::min(nk, (nvalid + 15) / 16 * 16); }

constexpr int64_t kLanes = 16;

// Σ of kLanes partial sums, pairwise: as shuffles in vector registers, where the sum of a
// `#pragma omp simd` reduction became 16 scalar adds in a row, a chain of their latencies.
inline float pairwise_sum(float* lanes) {
    static_assert(kLanes == 16);
#pragma omp simd
    for (int64_t l = 0; l < 8; l++) lanes[l] += lanes[l + 8];
#pragma omp simd
    for (int64_t l = 0; l < 4; l++) lanes[l] += lanes[l + 4];
    return (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
}

// Forward, one query row's scores sr[0..nk) of a key block, of which it sees the first nvalid
// (at least 1): they become exp(s − m) for the row's new running maximum m, the hidden ones 0.
// The row's running maximum and sum move on; returns the factor by which what the row summed
// before (its output too) must be rescaled.
inline float online_softmax_row(float* sr, int64_t nvalid, int64_t nk, bool first_block, float& row_max,
                                float& row_sum) {
    const int64_t end = vector_end(nvalid, nk);
    std::fill(sr + nvalid, sr + end, kNegInf);  // e^−∞ = 0, and no part of the maximum
    float block_max = kNegInf;
#pragma omp simd reduction(max : block_max)
    for (int64_t j = 0; j < end; j++) block_max = sr[j] > block_max ? sr[j] : block_max;
    const float m_new = std::max(row_max, block_max);
    const float correction = first_block ? 0.0f : fast_exp(row_max - m_new);
    float lanes[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= end; j += kLanes) {
#pragma omp simd
        for (int64_t l = 0; l < kLanes; l++) {
            const float e = fast_exp_nonpositive(sr[j + l] - m_new);
            sr[j + l] = e;
            lanes[l] += e;
        }
    }
    for (int64_t l = 0; j < end; j++, l++) {
        sr[j] = fast_exp_nonpositive(sr[j] - m_new);
        lanes[l] += sr[j];
    }
    const float sum = pairwise_sum(lanes);
    std::fill(sr + end, sr + nk, 0.0f);
    row_sum = row_sum * correction + sum;
    row_max = m_new;
    return correction;
}

// Backward, one query row of a key block: from its scaled scores pr and dP = dO·Vᵀ in dsr, pr
// becomes P = exp(s − lse) and dsr becomes dS = P ∘ (dP − D)·scale, with D = rowsum(dO ∘ O);
// both are 0 on the nk − nvalid keys the row does not see.
inline void softmax_backward_row(float* pr, float* dsr, int64_t nvalid, int64_t nk, float lse, float D,
                                 float scale) {
    const int64_t end = vector_end(nvalid, nk);
    std::fill(pr + nvalid, pr + end, kNegInf);  // e^−∞ = 0
#pragma omp simd
    for (int64_t j = 0; j < end; j++) {
        const float pj = fast_exp_nonpositive(pr[j] - lse);
        pr[j] = pj;
        dsr[j] = pj * (dsr[j] - D) * scale;
    }
    std::fill(pr + end, pr + nk, 0.0f);
    std::fill(dsr + end, dsr + nk, 0.0f);
}

// rowsum(dO ∘ O) of one row of HS channels.
inline float row_dot(const float* dO, const float* o, int64_t HS) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t d = 0; d < HS; d++) sum += dO[d] * o[d];
    return sum;
}

// rowsum(dO ∘ O) of every (sequence, head, query) into D, laid out as lse (B, NH, T): one pass
// over both (B·T, C) matrices in the order they lie, shared among the calling team (a barrier
// at its end). Taken a tile at a time, O's rows (C apart, read by nothing else) were missed in
// the caches: a tenth of the bf16 backward's time on config C, mostly waiting on O.
inline void row_dots(float* D, const float* dout, const float* out, int64_t B, int64_t T, int64_t C, int64_t NH) {
    const int64_t HS = C / NH;
#pragma omp for schedule(static)
    for (int64_t n = 0; n < B * T; n++) {
        const int64_t b = n / T, t = n % T;
        for (int64_t h = 0; h < NH; h++) D[(b * NH + h) * T + t] = row_dot(dout + n * C + h * HS, out + n * C + h * HS, HS);
    }
}

// The end of a query tile's forward: its nq output rows (row stride C) divided by their sums,
// and each row's log-sum-exp.
inline void finish_rows(float* o, int64_t C, int64_t nq, int64_t HS, const float* row_max, const float* row_sum,
                        float* lse) {
    for (int64_t r = 0; r < nq; r++) {
        float* orow = o + r * C;
        const float inv = 1.0f / row_sum[r];
#pragma omp simd
        for (int64_t d = 0; d < HS; d++) orow[d] *= inv;
        lse[r] = row_max[r] + std::log(row_sum[r]);
    }
}

// The walks below are templates compiled, like all of this file, for the baseline level
// (kernels/isa_begin.h): each is always inlined, so that its loops and the softmax rows in them
// take the calling kernel's level. (Left to GCC, forward_tile stayed a call, and config C's bf16
// forward ran its softmax on SSE: 2.5 ms became 3.7.)
// One query tile of forward: queries i0..i0+nq-1 of one (sequence, head) whose keys past
// key_len are padding; it writes their output rows o (C apart, HS channels) and log-sum-exps.
struct ForwardTile {
    int64_t i0, nq, key_len;
    float* o;
    int64_t C, HS;
    float* lse;
};

// A tile's forward, key block by key block, with the online softmax: scores(j0, nk) writes the
// block's scaled scores S into s (kKeyBlock apart); each row becomes P, which packed(r, nk) sees
// while it is still in L1, and its output so far is rescaled to the row's new maximum;
// values(j0, nk) adds P·V to the output (writes it, in block 0). At the end, each output row is
// divided by its sum.
template <class Scores, class Packed, class Values>
[[gnu::always_inline]] inline void forward_tile(const ForwardTile& t, const AttentionMask& mask, float* s,
                                                Scores&& scores, Packed&& packed, Values&& values) {
    float row_max[kTile], row_sum[kTile];
    std::fill_n(row_max, t.nq, kNegInf);
    std::fill_n(row_sum, t.nq, 0.0f);
    const int64_t tile_key_end = key_end(mask, t.i0 + t.nq - 1, t.key_len);
    for (int64_t j0 = 0; j0 < tile_key_end; j0 += kKeyBlock) {
        const int64_t nk = std::min(tile_key_end, j0 + kKeyBlock) - j0;
        scores(j0, nk);
        for (int64_t r = 0; r < t.nq; r++) {
            const int64_t nvalid = visible_keys(mask, t.i0 + r, t.key_len, j0, nk);
            const float correction = online_softmax_row(s + r * kKeyBlock, nvalid, nk, j0 == 0, row_max[r], row_sum[r]);
            packed(r, nk);
            if (j0 > 0) {
                float* orow = t.o + r * t.C;
#pragma omp simd
                for (int64_t d = 0; d < t.HS; d++) orow[d] *= correction;
            }
        }
        values(j0, nk);
    }
    finish_rows(t.o, t.C, t.nq, t.HS, row_max, row_sum, t.lse);
}

// One key block of backward: queries i0..i0+nq-1 of query head h in sequence b, against keys
// j0..j0+nk-1 of its key/value head kvh. Each output row is first written (not added to) by the
// first block that reaches it: dQ's rows by their tile's first block (first_q), dK's and dV's by
// the blocks of the first tile visited, the group's first head's last tile (first_kv).
struct BackwardBlock {
    int64_t b, h, kvh, i0, nq, j0, nk, key_len;
    bool first_q, first_kv;
};

// Calls visit(block) for every key block of the key/value head kvh of sequence b: each query
// head of kvh's group, and its query tiles from the last, which sees every key any tile sees.
template <class Visit>
[[gnu::always_inline]] inline void for_each_backward_block(const AttentionMask& mask, int64_t b, int64_t kvh,
                                                           int64_t T, int64_t group, Visit&& visit) {
    const int64_t kl = key_len_of(mask, b, T), num_tiles = (T + kTile - 1) / kTile;
    for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
        for (int64_t qt = num_tiles - 1; qt >= 0; qt--) {
            const int64_t i0 = qt * kTile, nq = std::min(T, i0 + kTile) - i0;
            const int64_t tile_key_end = key_end(mask, i0 + nq - 1, kl);
            const bool first_tile = h == kvh * group && qt == num_tiles - 1;
            for (int64_t j0 = 0; j0 < tile_key_end; j0 += kKeyBlock) {
                const int64_t nk = std::min(tile_key_end, j0 + kKeyBlock) - j0;
                visit(BackwardBlock{b, h, kvh, i0, nq, j0, nk, kl, j0 == 0, first_tile});
            }
        }
    }
}

// Backward's softmax over a block's rows (softmax_backward_row), p and ds kKeyBlock apart; then
// after_row(r) while row r is still in L1. lse and D: the block's sequence and head, as row_dots.
template <class AfterRow>
[[gnu::always_inline]] inline void softmax_backward_block(float* p, float* ds, const BackwardBlock& k,
                                                          const AttentionMask& mask, int64_t T, const float* lse,
                                                          const float* D, int64_t NH, float scale,
                                                          AfterRow&& after_row) {
    const int64_t row0 = (k.b * NH + k.h) * T + k.i0;
    for (int64_t r = 0; r < k.nq; r++) {
        softmax_backward_row(p + r * kKeyBlock, ds + r * kKeyBlock, visible_keys(mask, k.i0 + r, k.key_len, k.j0, k.nk),
                             k.nk, lse[row0 + r], D[row0 + r], scale);
        after_row(r);
    }
}

// Backward: zero dK and dV (row stride C3, dv at dk + KVC) of keys first..T-1, which no query
// sees.
inline void zero_unseen_keys(float* dk, int64_t C3, int64_t KVC, int64_t HS, int64_t first, int64_t T) {
    for (int64_t j = first; j < T; j++) {
        std::fill_n(dk + j * C3, HS, 0.0f);
        std::fill_n(dk + j * C3 + KVC, HS, 0.0f);
    }
}

}  // namespace lmforge::kernels::attention_tiling
