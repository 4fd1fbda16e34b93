// Attention's products on bf16 dot products (AVX512_BF16's vdpbf16ps), with the tiling, the
// masking and the fp32 softmax of kernels/attention.cpp (kernels/attention_tiling.h).
//
// vdpbf16ps multiplies pairs: each fp32 lane adds a0·b0 + a1·b1, where (a0, a1) and (b0, b1) are
// two bf16 side by side in a 32-bit word. So each product C = A·B here reads its operands as
// pairs along the summed index p: A as pairs (r, p) that one word broadcasts to every lane, B as
// rows of pairs (p, n) that load 16 columns at once. Which layout that is depends on the product:
//   S = Q·Kᵀ, dP = dO·Vᵀ   A: rows of Q, dO (pairs of channels);  B: K, V by channel pairs
//   O = P·V,  dQ = dS·K    A: rows of P, dS (pairs of keys);      B: V, K by key pairs
//   dK = dSᵀ·Q, dV = Pᵀ·dO A: dS, P by query pairs, read down;    B: Q, dO by query pairs
// A thread packs the K and V of each (sequence, key/value head) it works on; a query tile's Q and
// dO, and a block's P and dS, as they are made. An odd count of a summed index ends in a pair whose
// second half is 0 in both operands.
//
// AMX's tiles take B in this same layout, and A as rows of pairs: where the CPU has them
// (backend/amx_tiles.h), every product's whole 16 x 16 blocks run on them, dK and dV as their
// transposes (Qᵀ·dS, dOᵀ·P), and what is left over on vdpbf16ps.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "backend/amx_tiles.h"
#include "core/bf16.h"
#include "kernels/attention_tiling.h"

#include "kernels/isa_begin.h"

#if LMFORGE_ISA_AVX512

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

#define LMFORGE_BF16_DOT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

using namespace attention_tiling;

constexpr int64_t kLanes = 16;  // fp32 lanes of a vector: the columns of B one load covers

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }
int64_t pairs_of(int64_t n) { return (n + 1) / 2; }

// A product's first operand: pair (r, p) lies at pairs + 2·(r·row_step + p·pair_step).
struct PairsA {
    const bf16* pairs;
    int64_t row_step, pair_step;
};
// Its second: rows of pairs, pair (p, n) at pairs + 2·(p·ld + n); ld a multiple of 16, and
// the columns of a row read up to the next multiple of 16.
struct PairsB {
    const bf16* pairs;
    int64_t ld;
};

// C (R, 16·NV) = alpha · Σ_p A(r, p)·B(p, n), added to C when accumulate; the last vector of
// columns stores only the lanes of last_mask.
// (The operands come apart, not as PairsA and PairsB: passed by value, the structs went through
// the stack, and reading them back whole from the smaller stores that wrote them stalled each
// call — 19% of config C's forward.)
template <int R, int NV>
LMFORGE_BF16_DOT void pair_tile(const bf16* a, int64_t a_row_step, int64_t a_pair_step, const bf16* b, int64_t ldb,
                                int64_t npairs, float* c, int64_t ldc, float alpha, bool accumulate,
                                __mmask16 last_mask) {
    __m512 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
    for (int64_t p = 0; p < npairs; p++) {
        __m512bh bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) bv[v] = (__m512bh)_mm512_loadu_si512(b + 2 * (p * ldb + v * kLanes));
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            uint32_t pair;
            std::memcpy(&pair, a + 2 * (r * a_row_step + p * a_pair_step), sizeof pair);
            const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            const __mmask16 mask = v == NV - 1 ? last_mask : __mmask16(0xFFFF);
            float* cp = c + r * ldc + v * kLanes;
            __m512 x = _mm512_mul_ps(acc[r][v], va);
            if (accumulate) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, cp));
            _mm512_mask_storeu_ps(cp, mask, x);
        }
}

// Rows by 6 and columns by 4 vectors: 24 accumulators, 4 loads of B and 6 broadcasts of A for
// every 24 vdpbf16ps.
constexpr int kRows = 6, kVectors = 4;
using PairTile = void (*)(const bf16*, int64_t, int64_t, const bf16*, int64_t, int64_t, float*, int64_t, float, bool,
                          __mmask16);

template <int R>
constexpr std::array<PairTile, kVectors> tiles_of_rows() {
    return {pair_tile<R, 1>, pair_tile<R, 2>, pair_tile<R, 3>, pair_tile<R, 4>};
}
constexpr std::array<std::array<PairTile, kVectors>, kRows> kPairTiles = {
    tiles_of_rows<1>(), tiles_of_rows<2>(), tiles_of_rows<3>(),
    tiles_of_rows<4>(), tiles_of_rows<5>(), tiles_of_rows<6>()};

// C (m, n) = alpha · A·B over npairs pairs, added to C (row stride ldc) when accumulate.
void vector_pair_gemm(int64_t m, int64_t n, int64_t npairs, float alpha, PairsA a, PairsB b, bool accumulate,
                      float* c, int64_t ldc) {
    if (npairs == 0 && accumulate) return;
    for (int64_t n0 = 0; n0 < n; n0 += kVectors * kLanes) {
        const int64_t cols = std::min(n - n0, kVectors * kLanes);
        const int64_t nv = (cols + kLanes - 1) / kLanes, tail = cols - (nv - 1) * kLanes;
        const auto last_mask = static_cast<__mmask16>((1u << tail) - 1u);
        for (int64_t m0 = 0; m0 < m; m0 += kRows) {
            const int64_t rows = std::min(m - m0, int64_t{kRows});
            kPairTiles[rows - 1][nv - 1](a.pairs + 2 * m0 * a.row_step, a.row_step, a.pair_step, b.pairs + 2 * n0, b.ld,
                                         npairs, c + m0 * ldc + n0, ldc, alpha, accumulate, last_mask);
        }
    }
}

constexpr int64_t kTileSide = 16;  // AMX's tiles: 16 x 16 fp32 of C, 16 pairs deep
int64_t whole_tiles(int64_t n) { return n / kTileSide * kTileSide; }

// What the tiles leave of a product whose whole 16 x 16 blocks over whole steps of 16 pairs
// (m16 x n16 x p16) they took: the pairs past p16 of those blocks, the columns past n16 of
// their rows and the rows past m16, on vdpbf16ps.
void vector_pair_rest(int64_t m, int64_t n, int64_t npairs, int64_t m16, int64_t n16, int64_t p16, float alpha,
                      PairsA a, PairsB b, bool accumulate, float* c, int64_t ldc) {
    const PairsA a_rest_pairs{a.pairs + 2 * p16 * a.pair_step, a.row_step, a.pair_step};
    const PairsA a_rest_rows{a.pairs + 2 * m16 * a.row_step, a.row_step, a.pair_step};
    vector_pair_gemm(m16, n16, npairs - p16, alpha, a_rest_pairs, {b.pairs + 2 * p16 * b.ld, b.ld}, true, c, ldc);
    vector_pair_gemm(m16, n - n16, npairs, alpha, a, {b.pairs + 2 * n16, b.ld}, accumulate, c + n16, ldc);
    vector_pair_gemm(m - m16, n, npairs, alpha, a_rest_rows, b, accumulate, c + m16 * ldc, ldc);
}

// The same on AMX's tiles where they are usable (backend/amx_tiles.h) and A holds its pairs
// side by side, as a tile takes it: the whole blocks on tiles, the rest on vdpbf16ps.
void pair_gemm(int64_t m, int64_t n, int64_t npairs, float alpha, PairsA a, PairsB b, bool accumulate, float* c,
               int64_t ldc) {
    const int64_t m16 = whole_tiles(m), n16 = whole_tiles(n), p16 = whole_tiles(npairs);
    const std::optional<backend::TileUnit> unit = backend::tile_unit();
    if (!unit || a.pair_step != 1 || m16 == 0 || n16 == 0 || p16 == 0) {
        vector_pair_gemm(m, n, npairs, alpha, a, b, accumulate, c, ldc);
        return;
    }
    backend::tile_pair_product({.m = m16, .n = n16, .npairs = p16, .alpha = alpha, .a = a.pairs, .a_ld = a.row_step,
                                .b = b.pairs, .b_ld = b.ld, .accumulate = accumulate, .c = c, .ldc = ldc},
                               *unit);
    vector_pair_rest(m, n, npairs, m16, n16, p16, alpha, a, b, accumulate, c, ldc);
}

// A product whose A is read down its pairs (row_step 1: dK = dSᵀ·Q, dV = Pᵀ·dO): on tiles as
// Cᵀ = Bᵀ·Aᵀ, whose A is bt, B's transpose (n rows of pairs, bt_ld pairs apart: transpose_pairs),
// and whose B is A as it lies (rows of pairs over A's rows). Null bt: on vdpbf16ps alone.
void pair_gemm_down(int64_t m, int64_t n, int64_t npairs, float alpha, PairsA a, PairsB b, const bf16* bt,
                    int64_t bt_ld, bool accumulate, float* c, int64_t ldc) {
    const int64_t m16 = whole_tiles(m), n16 = whole_tiles(n), p16 = whole_tiles(npairs);
    const std::optional<backend::TileUnit> unit = backend::tile_unit();
    if (!unit || bt == nullptr || a.row_step != 1 || m16 == 0 || n16 == 0 || p16 == 0) {
        vector_pair_gemm(m, n, npairs, alpha, a, b, accumulate, c, ldc);
        return;
    }
    backend::tile_pair_product({.m = n16, .n = m16, .npairs = p16, .alpha = alpha, .a = bt, .a_ld = bt_ld,
                                .b = a.pairs, .b_ld = a.pair_step, .accumulate = accumulate, .c = c, .ldc = ldc,
                                .c_transposed = true},
                               *unit);
    vector_pair_rest(m, n, npairs, m16, n16, p16, alpha, a, b, accumulate, c, ldc);
}

// bt (cols rows of pairs, bt_ld pairs apart) = the pairs (npairs rows over cols, ld apart)
// transposed: pair (p, c) moves to row c, place p.
void transpose_pairs(const bf16* pairs, int64_t ld, int64_t npairs, int64_t cols, bf16* bt, int64_t bt_ld) {
    for (int64_t p = 0; p < npairs; p++) {
        for (int64_t c = 0; c < cols; c++) std::memcpy(bt + 2 * (c * bt_ld + p), pairs + 2 * (p * ld + c), 4);
    }
}

// Loads that turn fp32 or bf16 inputs into bf16: 32 consecutive values of a row, and 16 of one
// row beside 16 of another (x0's in the lower half); the masked forms read the lanes of their
// masks and zero the rest. (Masked loads only at the ends: they cannot take data still on its
// way to the cache.)
LMFORGE_BF16_DOT inline __m512i row32(const float* x) {
    return (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + kLanes), _mm512_loadu_ps(x));
}
LMFORGE_BF16_DOT inline __m512i row32(const bf16* x) { return _mm512_loadu_si512(x); }
LMFORGE_BF16_DOT inline __m512i row32(const float* x, int64_t n) {
    const auto lo = static_cast<__mmask16>((1u << std::min<int64_t>(n, kLanes)) - 1u);
    const auto hi = static_cast<__mmask16>((1u << std::max<int64_t>(n - kLanes, 0)) - 1u);
    return (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, x + kLanes), _mm512_maskz_loadu_ps(lo, x));
}
LMFORGE_BF16_DOT inline __m512i row32(const bf16* x, int64_t n) {
    return _mm512_maskz_loadu_epi16(static_cast<__mmask32>((uint64_t{1} << n) - 1u), x);
}
LMFORGE_BF16_DOT inline __m512i two_rows16(const float* x0, const float* x1) {
    return (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x1), _mm512_loadu_ps(x0));
}
// (Two masked broadcasts: GCC's inserts and casts from 256 bits read an undefined vector and
// warn of it.)
LMFORGE_BF16_DOT inline __m512i halves(__m256i lo, __m256i hi) {
    return _mm512_mask_broadcast_i64x4(_mm512_maskz_broadcast_i64x4(0x0F, lo), 0xF0, hi);
}
LMFORGE_BF16_DOT inline __m512i two_rows16(const bf16* x0, const bf16* x1) {
    return halves(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0)),
                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1)));
}
LMFORGE_BF16_DOT inline __m512i two_rows16(const float* x0, __mmask16 m0, const float* x1, __mmask16 m1) {
    return (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, x1), _mm512_maskz_loadu_ps(m0, x0));
}
LMFORGE_BF16_DOT inline __m512i two_rows16(const bf16* x0, __mmask16 m0, const bf16* x1, __mmask16 m1) {
    return halves(_mm256_maskz_loadu_epi16(m0, x0), _mm256_maskz_loadu_epi16(m1, x1));
}

// out (rows, ⌈cols/2⌉ pairs, ld pairs apart): row r of x (fp32 or bf16, ldx apart) in bf16,
// pairs along its columns, a 0 after an odd count.
template <class In>
LMFORGE_BF16_DOT void pack_rows(const In* x, int64_t ldx, int64_t rows, int64_t cols, bf16* out, int64_t ld) {
    const int64_t whole = cols / (2 * kLanes) * (2 * kLanes), n = cols - whole;
    for (int64_t r = 0; r < rows; r++) {
        const In* xr = x + r * ldx;
        bf16* o = out + 2 * r * ld;
        for (int64_t c = 0; c < whole; c += 2 * kLanes) _mm512_storeu_si512(o + c, row32(xr + c));
        if (n > 0) {
            _mm512_mask_storeu_epi16(o + whole, static_cast<__mmask32>((uint64_t{1} << n) - 1u), row32(xr + whole, n));
        }
        if (cols % 2 != 0) o[cols] = 0;
    }
}

// out (⌈rows/2⌉, cols, ld pairs apart): pair (p, c) is (x[2p][c], x[2p+1][c]) in bf16, a 0
// for the second of an odd count of rows.
template <class In>
LMFORGE_BF16_DOT void pack_row_pairs(const In* x, int64_t ldx, int64_t rows, int64_t cols, bf16* out, int64_t ld) {
    // 16 bf16 of one row, then 16 of the next, interleaved into 16 pairs.
    alignas(64) static constexpr int16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                            8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i interleave = _mm512_load_si512(kInterleave);
    for (int64_t p = 0; p < pairs_of(rows); p++) {
        const In* x0 = x + 2 * p * ldx;
        const bool second = 2 * p + 1 < rows;
        for (int64_t c = 0; c < cols; c += kLanes) {
            bf16* o = out + 2 * (p * ld + c);
            if (cols - c >= kLanes && second) {
                _mm512_storeu_si512(o, _mm512_permutexvar_epi16(interleave, two_rows16(x0 + c, x0 + ldx + c)));
            } else {
                const auto mask = static_cast<__mmask16>((1u << std::min(cols - c, kLanes)) - 1u);
                // Without a second row, no lane of it is read (nor its address formed).
                const In* x1 = second ? x0 + ldx + c : x0 + c;
                const __m512i both = two_rows16(x0 + c, mask, x1, second ? mask : __mmask16(0));
                _mm512_mask_storeu_epi32(o, mask, _mm512_permutexvar_epi16(interleave, both));
            }
        }
    }
}

// out (⌈cols/2⌉, rows, ld pairs apart): pair (p, r) is (x[r][2p], x[r][2p+1]) in bf16 — the
// pairs of pack_rows, transposed. `rows_packed` is scratch for rows · ⌈cols/2⌉ pairs.
template <class In>
LMFORGE_BF16_DOT void pack_column_pairs(const In* x, int64_t ldx, int64_t rows, int64_t cols, bf16* out,
                                        int64_t ld, bf16* rows_packed) {
    const int64_t np = pairs_of(cols);
    pack_rows(x, ldx, rows, cols, rows_packed, np);
    const __m512i row_offsets = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                                   _mm512_set1_epi32(static_cast<int>(np)));
    for (int64_t r0 = 0; r0 < rows; r0 += kLanes) {
        const auto mask = static_cast<__mmask16>((1u << std::min(rows - r0, kLanes)) - 1u);
        for (int64_t p = 0; p < np; p++) {
            const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask, row_offsets,
                                                          rows_packed + 2 * (r0 * np + p), 4);
            _mm512_mask_storeu_epi32(out + 2 * (p * ld + r0), mask, v);
        }
    }
}

// The shape of one call, in the names of kernels/attention.h.
struct Dims {
    int64_t B, T, C, NH, NKV, HS, KVC, C3, group;
    Dims(int64_t B_, int64_t T_, int64_t C_, int64_t NH_, int64_t NKV_)
        : B(B_), T(T_), C(C_), NH(NH_), NKV(NKV_), HS(C_ / NH_), KVC(NKV_ * HS), C3(C_ + 2 * KVC), group(NH_ / NKV_) {}
    int64_t channel_pairs() const { return pairs_of(HS); }
    int64_t channel_ld() const { return round_up(HS, kLanes); }  // pairs of a row over the channels
};

// K or V of one (sequence, key/value head), in one or both layouts a B operand takes: by
// channel pairs (⌈HS/2⌉ rows of pairs over the keys) and by key pairs (⌈T/2⌉ rows of pairs over
// the channels). Each thread packs the heads it meets into its own: packing every head once
// into a shared buffer before the products cost config C more than the products themselves
// (6 MiB to allocate and fault in on one thread while the other waited).
class PackedHead {
public:
    PackedHead(const Dims& d, bool by_channel, bool by_key, std::atomic<bool>& failed)
        : T_(d.T), HS_(d.HS), key_ld_(round_up(d.T, kLanes)), channel_ld_(d.channel_ld()) {
        if (by_channel) {
            channels_ = thread_scratch(by_channel_, 2 * d.channel_pairs() * key_ld_, failed);
            rows_ = thread_scratch(rows_packed_, 2 * d.T * d.channel_pairs(), failed);
        }
        if (by_key) keys_ = thread_scratch(by_key_, 2 * pairs_of(d.T) * channel_ld_, failed);
    }
    // x: the head's first channel at key 0 (fp32 or bf16); keys ld elements apart. Only when it
    // is another head than the one packed last.
    template <class In>
    void pack(const In* x, int64_t ld) {
        if (x == packed_) return;
        if (channels_ != nullptr) pack_column_pairs(x, ld, T_, HS_, channels_, key_ld_, rows_);
        if (keys_ != nullptr) pack_row_pairs(x, ld, T_, HS_, keys_, channel_ld_);
        packed_ = x;
    }
    // Keys j0.. by channel pairs: B of S = Q·Kᵀ, dP = dO·Vᵀ.
    PairsB by_channel(int64_t j0) const { return {channels_ + 2 * j0, key_ld_}; }
    // Keys j0.. (j0 even) by key pairs: B of O = P·V, dQ = dS·K.
    PairsB by_key(int64_t j0) const { return {keys_ + j0 * channel_ld_, channel_ld_}; }

private:
    int64_t T_, HS_, key_ld_, channel_ld_;
    std::vector<bf16> by_channel_, rows_packed_, by_key_;
    bf16 *channels_ = nullptr, *rows_ = nullptr, *keys_ = nullptr;
    const void* packed_ = nullptr;
};

// Pairs of a key block's row: the row stride of P and dS by key pairs.
constexpr int64_t kBlockPairs = kKeyBlock / 2;  // pairs of a row of a key block
constexpr int64_t kTilePairs = kTile / 2;       // query pairs of a tile

// A query tile's Q or dO in the layouts backward multiplies it in: by rows of channel pairs
// (A of S, dP), by query pairs (B of dK, dV) and, where tiles take dK and dV, those pairs
// transposed (A of their transposes on tiles: pair_gemm_down).
class QueryTile {
public:
    QueryTile(const Dims& d, bool transposed, std::atomic<bool>& failed)
        : HS_(d.HS), np_(d.channel_pairs()), cld_(d.channel_ld()) {
        rows_ = thread_scratch(rows_buf_, 2 * kTile * np_, failed);
        pairs_ = thread_scratch(pairs_buf_, 2 * kTilePairs * cld_, failed);
        if (transposed) transposed_ = thread_scratch(transposed_buf_, 2 * HS_ * kTilePairs, failed);
    }
    // x: the tile's first row (nq rows, ld apart).
    template <class In>
    void pack(const In* x, int64_t ld, int64_t nq) {
        pack_rows(x, ld, nq, HS_, rows_, np_);
        pack_row_pairs(x, ld, nq, HS_, pairs_, cld_);
        if (transposed_ != nullptr) transpose_pairs(pairs_, cld_, pairs_of(nq), HS_, transposed_, kTilePairs);
    }
    PairsA by_rows() const { return {rows_, np_, 1}; }
    PairsB by_query_pairs() const { return {pairs_, cld_}; }
    const bf16* transposed() const { return transposed_; }  // kTilePairs pairs apart; null without tiles

private:
    int64_t HS_, np_, cld_;
    std::vector<bf16> rows_buf_, pairs_buf_, transposed_buf_;
    bf16 *rows_ = nullptr, *pairs_ = nullptr, *transposed_ = nullptr;
};

// A key block's P and dS (query, key; kKeyBlock apart) in fp32, as the products and the softmax
// make them, and in bf16 as the products that read them take them: dS by rows (A of dQ), dS and
// P by query pairs (A of dK, dV, read down).
class ScoreBlock {
public:
    explicit ScoreBlock(std::atomic<bool>& failed) {
        p_ = thread_scratch(p_buf_, kTile * kKeyBlock, failed);
        ds_ = thread_scratch(ds_buf_, kTile * kKeyBlock, failed);
        ds_rows_ = thread_scratch(ds_rows_buf_, 2 * kTile * kBlockPairs, failed);
        ds_pairs_ = thread_scratch(ds_pairs_buf_, 2 * kTilePairs * kKeyBlock, failed);
        p_pairs_ = thread_scratch(p_pairs_buf_, 2 * kTilePairs * kKeyBlock, failed);
    }
    float* p() const { return p_; }
    float* ds() const { return ds_; }
    // dS's row r (nk keys) into its pairs by rows.
    void pack_ds_row(int64_t r, int64_t nk) const {
        pack_rows(ds_ + r * kKeyBlock, kKeyBlock, 1, nk, ds_rows_ + 2 * r * kBlockPairs, kBlockPairs);
    }
    void pack_by_query_pairs(int64_t nq, int64_t nk) const {
        pack_row_pairs(ds_, kKeyBlock, nq, nk, ds_pairs_, kKeyBlock);
        pack_row_pairs(p_, kKeyBlock, nq, nk, p_pairs_, kKeyBlock);
    }
    PairsA ds_by_rows() const { return {ds_rows_, kBlockPairs, 1}; }
    PairsA ds_down() const { return {ds_pairs_, 1, kKeyBlock}; }
    PairsA p_down() const { return {p_pairs_, 1, kKeyBlock}; }

private:
    std::vector<float> p_buf_, ds_buf_;
    std::vector<bf16> ds_rows_buf_, ds_pairs_buf_, p_pairs_buf_;
    float *p_ = nullptr, *ds_ = nullptr;
    bf16 *ds_rows_ = nullptr, *ds_pairs_ = nullptr, *p_pairs_ = nullptr;
};

// What one thread of backward packs: the K and V of the head it works on, a query tile's Q and
// dO, and a key block's P and dS.
struct BackwardScratch {
    BackwardScratch(const Dims& d, bool on_tiles, std::atomic<bool>& failed)
        : keys(d, true, true, failed),
          values(d, true, false, failed),
          q_tile(d, on_tiles, failed),
          do_tile(d, on_tiles, failed),
          block(failed) {}
    PackedHead keys, values;
    QueryTile q_tile, do_tile;
    ScoreBlock block;
};

// A backward call's arguments (kernels/attention.h), as its blocks read them; dots: rowsum(dO ∘ O)
// (row_dots).
template <class In>
struct BackwardCall {
    float* dqkv;
    const float* dout;
    const float* lse;
    const float* dots;
    const In* qkv;
    Dims d;
    const AttentionMask& mask;
    float scale;  // 1/√HS
};

// One key block of backward (attention_tiling::BackwardBlock), its key/value head packed:
// dS = P ∘ (dP − rowsum(dO ∘ O)), then its parts of dQ = dS·K, dK = dSᵀ·Q and dV = Pᵀ·dO.
template <class In>
void backward_block(const BackwardCall<In>& a, const BackwardBlock& k, BackwardScratch& s) {
    const Dims& d = a.d;
    const int64_t q_row = k.b * d.T + k.i0, np = d.channel_pairs(), nkp = pairs_of(k.nk), nqp = pairs_of(k.nq);
    if (k.first_q) {
        s.q_tile.pack(a.qkv + q_row * d.C3 + k.h * d.HS, d.C3, k.nq);
        s.do_tile.pack(a.dout + q_row * d.C + k.h * d.HS, d.C, k.nq);
    }
    const ScoreBlock& blk = s.block;
    pair_gemm(k.nq, k.nk, np, a.scale, s.q_tile.by_rows(), s.keys.by_channel(k.j0), false, blk.p(), kKeyBlock);
    pair_gemm(k.nq, k.nk, np, 1.0f, s.do_tile.by_rows(), s.values.by_channel(k.j0), false, blk.ds(), kKeyBlock);
    softmax_backward_block(blk.p(), blk.ds(), k, a.mask, d.T, a.lse, a.dots, d.NH, a.scale,
                           [&](int64_t r) { blk.pack_ds_row(r, k.nk); });
    blk.pack_by_query_pairs(k.nq, k.nk);
    float* dq = a.dqkv + q_row * d.C3 + k.h * d.HS;
    float* dk = a.dqkv + (k.b * d.T + k.j0) * d.C3 + d.C + k.kvh * d.HS;
    float* dv = dk + d.KVC;
    pair_gemm(k.nq, d.HS, nkp, 1.0f, blk.ds_by_rows(), s.keys.by_key(k.j0), !k.first_q, dq, d.C3);
    pair_gemm_down(k.nk, d.HS, nqp, 1.0f, blk.ds_down(), s.q_tile.by_query_pairs(), s.q_tile.transposed(), kTilePairs,
                   !k.first_kv, dk, d.C3);
    pair_gemm_down(k.nk, d.HS, nqp, 1.0f, blk.p_down(), s.do_tile.by_query_pairs(), s.do_tile.transposed(),
                   kTilePairs, !k.first_kv, dv, d.C3);
}

}  // namespace

bool attention_has_bf16_math() {
    static const bool has = __builtin_cpu_supports("avx512bf16");
    return has;
}

template <class In>
void attention_forward_bf16(float* out, float* lse, const In* qkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                            int64_t NKV, const AttentionMask& mask) {
    const Dims d(B, T, C, NH, NKV);
    const int64_t HS = d.HS, np = d.channel_pairs();
    const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
    const int64_t num_tiles = (T + kTile - 1) / kTile;
    // A thread takes a head's tiles together, so it packs its K and V once, where there are
    // heads enough for every thread (config C's forward: 4.66 ms with tiles dealt one by one,
    // each head's K and V packed by both threads).
    const int64_t chunk = B * NH >= 2 * omp_get_max_threads() ? num_tiles : 1;
    std::atomic<bool> no_scratch{false};
#pragma omp parallel
    {
        PackedHead keys(d, true, false, no_scratch), values(d, false, true, no_scratch);
        std::vector<float> scores;  // (query, key) of one block
        std::vector<bf16> q_pairs, p_pairs;
        float* s = thread_scratch(scores, kTile * kKeyBlock, no_scratch);
        bf16* q16 = thread_scratch(q_pairs, 2 * kTile * np, no_scratch);
        bf16* p16 = thread_scratch(p_pairs, 2 * kTile * kBlockPairs, no_scratch);
#pragma omp for collapse(3) schedule(dynamic, chunk)
        for (int64_t b = 0; b < B; b++) {
            for (int64_t h = 0; h < NH; h++) {
                for (int64_t qt = num_tiles - 1; qt >= 0; qt--) {  // longest rows first
                    if (no_scratch) continue;
                    const int64_t i0 = qt * kTile, nq = std::min(T, i0 + kTile) - i0, g = h / d.group;
                    float* o = out + (b * T + i0) * C + h * HS;
                    keys.pack(qkv + b * T * d.C3 + C + g * HS, d.C3);
                    values.pack(qkv + b * T * d.C3 + C + d.KVC + g * HS, d.C3);
                    pack_rows(qkv + (b * T + i0) * d.C3 + h * HS, d.C3, nq, HS, q16, np);
                    forward_tile(
                        {i0, nq, key_len_of(mask, b, T), o, C, HS, lse + (b * NH + h) * T + i0}, mask, s,
                        [&](int64_t j0, int64_t nk) {
                            pair_gemm(nq, nk, np, scale, {q16, np, 1}, keys.by_channel(j0), false, s, kKeyBlock);
                        },
                        [&](int64_t r, int64_t nk) {
                            pack_rows(s + r * kKeyBlock, kKeyBlock, 1, nk, p16 + 2 * r * kBlockPairs, kBlockPairs);
                        },
                        [&](int64_t j0, int64_t nk) {
                            pair_gemm(nq, HS, pairs_of(nk), 1.0f, {p16, kBlockPairs, 1}, values.by_key(j0), j0 > 0,
                                      o, C);
                        });
                }
            }
        }
    }
    throw_if_failed(no_scratch);
}

template <class In>
void attention_backward_bf16(float* dqkv, const float* dout, const float* out, const float* lse, const In* qkv,
                             int64_t B, int64_t T, int64_t C, int64_t NH, int64_t NKV, const AttentionMask& mask) {
    std::atomic<bool> no_scratch{false};
    std::vector<float> row_dot_sums;
    float* dots = thread_scratch(row_dot_sums, B * NH * T, no_scratch);  // rowsum(dO ∘ O), as lse
    const BackwardCall<In> call{dqkv, dout, lse, dots, qkv, Dims(B, T, C, NH, NKV), mask,
                                1.0f / std::sqrt(static_cast<float>(C / NH))};
    const Dims& d = call.d;
#pragma omp parallel
    {
        if (dots != nullptr) row_dots(dots, dout, out, B, T, C, NH);
        BackwardScratch scratch(d, backend::tile_unit().has_value(), no_scratch);
#pragma omp for collapse(2) schedule(dynamic)
        for (int64_t b = 0; b < B; b++) {
            // One thread owns a key/value head and every query head of its group, so the
            // group's contributions to dK and dV add up without any two threads writing them.
            for (int64_t kvh = 0; kvh < NKV; kvh++) {
                if (no_scratch) continue;
                scratch.keys.pack(qkv + b * T * d.C3 + C + kvh * d.HS, d.C3);
                scratch.values.pack(qkv + b * T * d.C3 + C + d.KVC + kvh * d.HS, d.C3);
                for_each_backward_block(mask, b, kvh, T, d.group,
                                        [&](const BackwardBlock& k) { backward_block(call, k, scratch); });
                zero_unseen_keys(dqkv + b * T * d.C3 + C + kvh * d.HS, d.C3, d.KVC, d.HS,
                                 key_end(mask, T - 1, key_len_of(mask, b, T)), T);
            }
        }
    }
    throw_if_failed(no_scratch);
}

template void attention_forward_bf16(float*, float*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                    const AttentionMask&);
template void attention_forward_bf16(float*, float*, const bf16*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                    const AttentionMask&);
template void attention_backward_bf16(float*, const float*, const float*, const float*, const float*, int64_t,
                                     int64_t, int64_t, int64_t, int64_t, const AttentionMask&);
template void attention_backward_bf16(float*, const float*, const float*, const float*, const bf16*, int64_t,
                                     int64_t, int64_t, int64_t, int64_t, const AttentionMask&);

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#undef LMFORGE_BF16_DOT

#endif  // LMFORGE_ISA_AVX512

#include "kernels/isa_end.h"
