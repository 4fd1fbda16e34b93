// Work splits over (batch, head, query tile) in forward and over (batch, key/value head) in
// backward, so each thread owns whole rows of its outputs. A query tile meets the keys in blocks, as many
// of each block as its rows may see; every product of a (query tile, key block) pair — S = Q·Kᵀ,
// O += P·V, dP = dO·Vᵀ, dQ += dS·K, dK += dSᵀ·Q, dV += Pᵀ·dO — is a small GEMM run on the
// calling thread (backend::tile_gemm), so the inner loops are oneDNN's JIT kernels; only the
// softmax and the masking are written here, one row at a time.
#include "kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <new>
#include <vector>

#include "backend/jit_room.h"
#include "backend/tile_gemm.h"
#include "core/error.h"
#include "kernels/fast_math.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

using backend::tile_gemm;
using backend::TileOp;

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

// n floats of scratch that a thread of a parallel region allocates for itself: glibc serves each
// thread from an arena of its own, so the threads' blocks lie apart (one allocation for all,
// the threads' parts side by side, made config C's bf16 step 2.5% slower on a Zen 5 with 2
// threads). An exception must not leave the region, so a failed allocation is noted in
// `failed` and null returned; throw_if_failed reports it after the region.
float* thread_scratch(std::vector<float>& v, size_t n, std::atomic<bool>& failed) {
    try {
        v.resize(n);
        return v.data();
    } catch (const std::bad_alloc&) {
        failed = true;
        return nullptr;
    }
}

void throw_if_failed(const std::atomic<bool>& failed) {
    if (failed) throw Error("attention: out of memory for its scratch blocks", backend::kOutOfMemoryHint);
}

}  // namespace

void attention_forward(float* out, float* lse, const float* qkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                       int64_t NKV, const AttentionMask& mask) {
    const int64_t HS = C / NH, C3 = C + 2 * NKV * HS, KVC = NKV * HS, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
    const int64_t num_tiles = (T + kTile - 1) / kTile;
    backend::prepare_tile_gemm();
    std::atomic<bool> no_scratch{false};

#pragma omp parallel
    {
        std::vector<float> scores;  // (query, key) of one block
        float* s = thread_scratch(scores, kTile * kKeyBlock, no_scratch);
#pragma omp for collapse(3) schedule(dynamic)
        for (int64_t b = 0; b < B; b++) {
            for (int64_t h = 0; h < NH; h++) {
                for (int64_t qt = num_tiles - 1; qt >= 0; qt--) {  // longest rows first
                    if (s == nullptr) continue;
                    const int64_t i0 = qt * kTile, nq = std::min(T, i0 + kTile) - i0;
                    const int64_t kl = key_len_of(mask, b, T), tile_key_end = key_end(mask, i0 + nq - 1, kl);
                    const float* q = qkv + (b * T + i0) * C3 + h * HS;
                    float* o = out + (b * T + i0) * C + h * HS;
                    float row_max[kTile], row_sum[kTile];
                    std::fill_n(row_max, nq, kNegInf);
                    std::fill_n(row_sum, nq, 0.0f);
                    for (int64_t j0 = 0; j0 < tile_key_end; j0 += kKeyBlock) {
                        const int64_t nk = std::min(tile_key_end, j0 + kKeyBlock) - j0;
                        const float* k = qkv + (b * T + j0) * C3 + C + h / group * HS;
                        const float* v = k + KVC;
                        tile_gemm(nq, nk, HS, scale, q, {false, C3}, k, {true, C3}, 0.0f, s, kKeyBlock);
                        for (int64_t r = 0; r < nq; r++) {
                            float* sr = s + r * kKeyBlock;
                            const int64_t nvalid = visible_keys(mask, i0 + r, kl, j0, nk);  // at least 1
                            float block_max = kNegInf;
#pragma omp simd reduction(max : block_max)
                            for (int64_t j = 0; j < nvalid; j++) block_max = sr[j] > block_max ? sr[j] : block_max;
                            // Online softmax: what was summed under the old maximum is rescaled.
                            const float m_new = std::max(row_max[r], block_max);
                            const float correction = j0 == 0 ? 0.0f : fast_exp(row_max[r] - m_new);
                            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                            for (int64_t j = 0; j < nvalid; j++) {
                                sr[j] = fast_exp(sr[j] - m_new);
                                sum += sr[j];
                            }
                            // Masked keys apart: summing their zeros in the same loop made GCC
                            // split it and add them one at a time.
                            std::fill(sr + nvalid, sr + nk, 0.0f);
                            row_sum[r] = row_sum[r] * correction + sum;
                            row_max[r] = m_new;
                            if (j0 > 0) {
                                float* orow = o + r * C;
#pragma omp simd
                                for (int64_t d = 0; d < HS; d++) orow[d] *= correction;
                            }
                        }
                        tile_gemm(nq, HS, nk, 1.0f, s, {false, kKeyBlock}, v, {false, C3}, j0 == 0 ? 0.0f : 1.0f, o,
                                  C);
                    }
                    for (int64_t r = 0; r < nq; r++) {
                        float* orow = o + r * C;
                        const float inv = 1.0f / row_sum[r];
#pragma omp simd
                        for (int64_t d = 0; d < HS; d++) orow[d] *= inv;
                        lse[(b * NH + h) * T + i0 + r] = row_max[r] + std::log(row_sum[r]);
                    }
                }
            }
        }
    }
    throw_if_failed(no_scratch);
    backend::check_tile_gemms();
}

void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse, const float* qkv,
                        int64_t B, int64_t T, int64_t C, int64_t NH, int64_t NKV, const AttentionMask& mask) {
    const int64_t HS = C / NH, C3 = C + 2 * NKV * HS, KVC = NKV * HS, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
    const int64_t num_tiles = (T + kTile - 1) / kTile;

    // With P = softmax(S) recomputed from lse and dP = dO·Vᵀ:  dS = P ∘ (dP − rowsum(dO ∘ O)),
    // dQ = scale·dS·K,  dK = scale·dSᵀ·Q,  dV = Pᵀ·dO. Each output row is first written (beta 0)
    // by the first pair that reaches it: dQ's by key block 0; dK's and dV's by the last query
    // tile, taken first, as it sees every key any tile sees. Keys no query sees are zeroed.
    backend::prepare_tile_gemm();
    std::atomic<bool> no_scratch{false};
#pragma omp parallel
    {
        std::vector<float> p_block, ds_block;  // (query, key)
        float* p = thread_scratch(p_block, kTile * kKeyBlock, no_scratch);
        float* ds = thread_scratch(ds_block, kTile * kKeyBlock, no_scratch);
#pragma omp for collapse(2) schedule(dynamic)
        for (int64_t b = 0; b < B; b++) {
            // One thread owns a key/value head and every query head of its group, so the
            // group's contributions to dK and dV add up without any two threads writing them.
            for (int64_t kvh = 0; kvh < NKV; kvh++) {
                if (p == nullptr || ds == nullptr) continue;
                const int64_t kl = key_len_of(mask, b, T);
                for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
                    const float* row_lse = lse + (b * NH + h) * T;
                    for (int64_t qt = num_tiles - 1; qt >= 0; qt--) {
                        const int64_t i0 = qt * kTile, nq = std::min(T, i0 + kTile) - i0;
                        const float* q = qkv + (b * T + i0) * C3 + h * HS;
                        const float* dO = dout + (b * T + i0) * C + h * HS;
                        float* dq = dqkv + (b * T + i0) * C3 + h * HS;
                        float rowdot[kTile];  // rowsum(dO ∘ O) of each query row
                        for (int64_t r = 0; r < nq; r++) {
                            const float* o = out + (b * T + i0 + r) * C + h * HS;
                            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                            for (int64_t d = 0; d < HS; d++) sum += dO[r * C + d] * o[d];
                            rowdot[r] = sum;
                        }
                        const int64_t tile_key_end = key_end(mask, i0 + nq - 1, kl);
                        for (int64_t j0 = 0; j0 < tile_key_end; j0 += kKeyBlock) {
                            const int64_t nk = std::min(tile_key_end, j0 + kKeyBlock) - j0;
                            const float* k = qkv + (b * T + j0) * C3 + C + kvh * HS;
                            const float* v = k + KVC;
                            float* dk = dqkv + (b * T + j0) * C3 + C + kvh * HS;
                            float* dv = dk + KVC;
                            tile_gemm(nq, nk, HS, scale, q, {false, C3}, k, {true, C3}, 0.0f, p, kKeyBlock);
                            tile_gemm(nq, nk, HS, 1.0f, dO, {false, C}, v, {true, C3}, 0.0f, ds, kKeyBlock);  // dP
                            for (int64_t r = 0; r < nq; r++) {
                                float* pr = p + r * kKeyBlock;
                                float* dsr = ds + r * kKeyBlock;
                                const int64_t nvalid = visible_keys(mask, i0 + r, kl, j0, nk);
                                const float m = row_lse[i0 + r], D = rowdot[r];
#pragma omp simd
                                for (int64_t j = 0; j < nk; j++) {
                                    const float pj = j < nvalid ? fast_exp(pr[j] - m) : 0.0f;
                                    pr[j] = pj;
                                    dsr[j] = pj * (dsr[j] - D) * scale;
                                }
                            }
                            const float first_q = j0 == 0 ? 0.0f : 1.0f;
                            const float first_kv = h == kvh * group && qt == num_tiles - 1 ? 0.0f : 1.0f;
                            tile_gemm(nq, HS, nk, 1.0f, ds, {false, kKeyBlock}, k, {false, C3}, first_q, dq, C3);
                            tile_gemm(nk, HS, nq, 1.0f, ds, {true, kKeyBlock}, q, {false, C3}, first_kv, dk, C3);
                            tile_gemm(nk, HS, nq, 1.0f, p, {true, kKeyBlock}, dO, {false, C}, first_kv, dv, C3);
                        }
                    }
                }
                for (int64_t j = key_end(mask, T - 1, kl); j < T; j++) {  // keys no query sees
                    float* dk = dqkv + (b * T + j) * C3 + C + kvh * HS;
                    std::fill_n(dk, HS, 0.0f);
                    std::fill_n(dk + KVC, HS, 0.0f);
                }
            }
        }
    }
    throw_if_failed(no_scratch);
    backend::check_tile_gemms();
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
