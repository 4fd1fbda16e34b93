#include "backend/amx_tiles.h"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/bf16.h"
#include "core/log.h"

namespace lmforge::backend {

namespace {

constexpr int kRows = 16, kRowBytes = 64, kPairs = 16;  // a tile's rows; bytes and pairs of a row

// C's block (m0, n0) = alpha · block (+ C), for products whose sums C does not take as they
// are (alpha, or C transposed).
void write_block_scalar(const TilePairProduct& p, const float* block, int64_t m0, int64_t n0) {
    if (p.c_transposed) {
        for (int n = 0; n < kRows; n++) {
            float* c = p.c + (n0 + n) * p.ldc + m0;
            for (int r = 0; r < kRows; r++) c[r] = p.alpha * block[r * kRows + n] + (p.accumulate ? c[r] : 0.0f);
        }
        return;
    }
    for (int r = 0; r < kRows; r++) {
        float* c = p.c + (m0 + r) * p.ldc + n0;
        const float* s = block + r * kRows;
        if (p.accumulate) {
            for (int n = 0; n < kRows; n++) c[n] += p.alpha * s[n];
        } else {
            for (int n = 0; n < kRows; n++) c[n] = p.alpha * s[n];
        }
    }
}

#define LMFORGE_AVX512 __attribute__((target("avx512f")))
// GCC 12's shuffle intrinsics start from _mm512_undefined_ps(), a self-initialised variable
// that -Wmaybe-uninitialized reports in functions with a target attribute. (Clang has no such
// warning to silence.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// The 16 x 16 block's rows transposed in registers: row i of the result is column i of rows.
LMFORGE_AVX512 void transpose_16x16(__m512 rows[kRows]) {
    __m512 t[kRows];
    for (int i = 0; i < kRows; i += 2) {  // interleave pairs of rows, 32-bit
        t[i] = _mm512_unpacklo_ps(rows[i], rows[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(rows[i], rows[i + 1]);
    }
    for (int i = 0; i < kRows; i += 4) {  // then 64-bit: rows[i + c] holds column c of each lane
        for (int j = 0; j < 2; j++) {
            const __m512d a = _mm512_castps_pd(t[i + j]), b = _mm512_castps_pd(t[i + j + 2]);
            rows[i + 2 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            rows[i + 2 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    }
    for (int i = 0; i < kRows; i += 8) {  // then 128-bit lanes, 4 rows apart
        for (int j = 0; j < 4; j++) {
            t[i + j] = _mm512_shuffle_f32x4(rows[i + j], rows[i + j + 4], 0x88);
            t[i + j + 4] = _mm512_shuffle_f32x4(rows[i + j], rows[i + j + 4], 0xdd);
        }
    }
    for (int j = 0; j < 8; j++) {  // then 256-bit halves, 8 rows apart
        rows[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
        rows[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
    }
}

// write_block_scalar on AVX-512 (bf16_tiles_usable() asks for it with AMX): it took a quarter
// of attention's backward on tiles as scalar code.
LMFORGE_AVX512 void write_block_avx512(const TilePairProduct& p, const float* block, int64_t m0, int64_t n0) {
    __m512 rows[kRows];
    for (int r = 0; r < kRows; r++) rows[r] = _mm512_load_ps(block + r * kRows);
    if (p.c_transposed) transpose_16x16(rows);
    const __m512 alpha = _mm512_set1_ps(p.alpha);
    for (int r = 0; r < kRows; r++) {
        float* c = p.c_transposed ? p.c + (n0 + r) * p.ldc + m0 : p.c + (m0 + r) * p.ldc + n0;
        const __m512 prior = p.accumulate ? _mm512_loadu_ps(c) : _mm512_setzero_ps();
        _mm512_storeu_ps(c, _mm512_fmadd_ps(alpha, rows[r], prior));
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#undef LMFORGE_AVX512

#define LMFORGE_TILES __attribute__((target("amx-tile,amx-bf16")))

// The tile instructions a product uses: C in tile 0, A in 1, B in 2. (The tile's number is part
// of the instruction: the intrinsics take literals.)
struct AmxTiles {
    AmxTiles() { load_tile_config(TileConfig::full()); }
    LMFORGE_TILES ~AmxTiles() { _tile_release(); }
    AmxTiles(const AmxTiles&) = delete;
    AmxTiles& operator=(const AmxTiles&) = delete;

    LMFORGE_TILES void zero_c() { _tile_zero(0); }
    LMFORGE_TILES void load_c(const void* base, int64_t stride) { _tile_loadd(0, base, stride); }
    LMFORGE_TILES void load_a(const void* base, int64_t stride) { _tile_loadd(1, base, stride); }
    LMFORGE_TILES void load_b(const void* base, int64_t stride) { _tile_loadd(2, base, stride); }
    LMFORGE_TILES void dot() { _tile_dpbf16ps(0, 1, 2); }
    LMFORGE_TILES void store_c(void* base, int64_t stride) { _tile_stored(0, base, stride); }
    static void write_block(const TilePairProduct& p, const float* block, int64_t m0, int64_t n0) {
        write_block_avx512(p, block, m0, n0);
    }
};

#undef LMFORGE_TILES

// The same instructions on tiles in memory, for the full configuration AmxTiles loads.
class EmulatedTiles {
public:
    void zero_c() { std::memset(c_, 0, sizeof c_); }
    void load_c(const void* base, int64_t stride) { load(c_, base, stride); }
    void load_a(const void* base, int64_t stride) { load(a_, base, stride); }
    void load_b(const void* base, int64_t stride) { load(b_, base, stride); }
    // C (16 x 16 fp32) += A (16 rows of 16 pairs) · B (16 rows of pairs by 16 columns).
    void dot() {
        for (int r = 0; r < kRows; r++) {
            for (int n = 0; n < kRows; n++) {
                float sum;
                std::memcpy(&sum, c_[r] + 4 * n, sizeof sum);
                for (int p = 0; p < kPairs; p++) {
                    sum += bf16_at(a_, r, 2 * p) * bf16_at(b_, p, 2 * n);
                    sum += bf16_at(a_, r, 2 * p + 1) * bf16_at(b_, p, 2 * n + 1);
                }
                std::memcpy(c_[r] + 4 * n, &sum, sizeof sum);
            }
        }
    }
    void store_c(void* base, int64_t stride) const {
        for (int r = 0; r < kRows; r++) std::memcpy(static_cast<char*>(base) + r * stride, c_[r], kRowBytes);
    }
    static void write_block(const TilePairProduct& p, const float* block, int64_t m0, int64_t n0) {
        write_block_scalar(p, block, m0, n0);
    }

private:
    using Tile = unsigned char[kRows][kRowBytes];
    static void load(Tile& t, const void* base, int64_t stride) {
        for (int r = 0; r < kRows; r++) std::memcpy(t[r], static_cast<const char*>(base) + r * stride, kRowBytes);
    }
    static float bf16_at(const Tile& t, int r, int i) {
        bf16 h;
        std::memcpy(&h, t[r] + 2 * i, sizeof h);
        return from_bf16(h);
    }

    Tile c_, a_, b_;
};

// Each 16 x 16 block of C in turn, over its row of A's tiles and column of B's.
// Where C takes the sums as they are (alpha 1, not transposed), its block is the tile's start
// (or zero) and the tile is stored in place.
template <class Tiles>
void product_on(Tiles& tiles, const TilePairProduct& p) {
    const bool in_place = p.alpha == 1.0f && !p.c_transposed;
    alignas(64) float block[kRows * kRows];
    for (int64_t m0 = 0; m0 < p.m; m0 += kRows) {
        for (int64_t n0 = 0; n0 < p.n; n0 += kRows) {
            float* c = p.c + m0 * p.ldc + n0;
            if (in_place && p.accumulate) {
                tiles.load_c(c, 4 * p.ldc);
            } else {
                tiles.zero_c();
            }
            for (int64_t p0 = 0; p0 < p.npairs; p0 += kPairs) {
                tiles.load_a(p.a + 2 * (m0 * p.a_ld + p0), 4 * p.a_ld);
                tiles.load_b(p.b + 2 * (p0 * p.b_ld + n0), 4 * p.b_ld);
                tiles.dot();
            }
            if (in_place) {
                tiles.store_c(c, 4 * p.ldc);
            } else {
                tiles.store_c(block, 4 * kRows);
                Tiles::write_block(p, block, m0, n0);
            }
        }
    }
}

// Whether the tiles' first product equals the emulation's: small integers in bf16, whose sums are
// exact in any order, so any difference is a fault (the tile state not kept across a switch,
// a configuration the CPU reads otherwise).
bool amx_agrees_with_emulation() {
    constexpr int64_t m = 32, n = 32, npairs = 32;
    std::vector<uint16_t> a(m * npairs * 2), b(npairs * n * 2);
    for (size_t i = 0; i < a.size(); i++) a[i] = to_bf16(static_cast<float>(int(i * 7 % 9) - 4));
    for (size_t i = 0; i < b.size(); i++) b[i] = to_bf16(static_cast<float>(int(i * 5 % 7) - 3));
    std::vector<float> on_tiles(m * n, 1.0f), emulated(m * n, 1.0f);
    TilePairProduct p{.m = m, .n = n, .npairs = npairs, .alpha = 1.0f, .a = a.data(), .a_ld = npairs,
                      .b = b.data(), .b_ld = n, .accumulate = true, .c = on_tiles.data(), .ldc = n};
    tile_pair_product(p, TileUnit::Amx);
    p.c = emulated.data();
    tile_pair_product(p, TileUnit::Emulated);
    return on_tiles == emulated;
}

std::optional<TileUnit> detected_unit() {
    static const std::optional<TileUnit> unit = []() -> std::optional<TileUnit> {
        if (!bf16_tiles_usable()) return std::nullopt;
        if (amx_agrees_with_emulation()) return TileUnit::Amx;
        log::warn("AMX tile products disagree with their emulation on this machine: attention stays on "
                  "AVX512_BF16");
        return std::nullopt;
    }();
    return unit;
}

// What use_tile_unit chose: a TileUnit, none, or the detected unit.
constexpr int kDetected = -2, kNone = -1;
std::atomic<int> chosen_unit{kDetected};

}  // namespace

bool bf16_tiles_usable() {
    static const bool usable = [] {
        __builtin_cpu_init();
        if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) return false;
        // The products write their blocks with AVX-512, which every AMX CPU sold has, but a
        // VM may offer the one without the other.
        if (!__builtin_cpu_supports("avx512f")) return false;
        // Linux keeps the tile registers out of a process's state until it asks (5.16 on); a
        // tile instruction before that is an illegal instruction.
        constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
        constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
        return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
    }();
    return usable;
}

void load_tile_config(const TileConfig& config) {
    // Not _tile_loadconfig: GCC 12's declares an 8-byte memory operand, so the optimiser drops
    // the stores of a configuration built just before as dead past those 8 bytes, and ldtilecfg
    // faults on whatever the stack held. This operand is the whole 64 bytes.
    asm volatile("ldtilecfg %0" : : "m"(config));
}

TileConfig TileConfig::full() {
    TileConfig config;
    for (int t = 0; t < 8; t++) {
        config.rows[t] = kRows;
        config.bytes_per_row[t] = kRowBytes;
    }
    return config;
}

void tile_pair_product(const TilePairProduct& p, TileUnit unit) {
    if (p.m % kRows != 0 || p.n % kRows != 0 || p.npairs % kPairs != 0) {
        throw std::logic_error("tile_pair_product: m, n and npairs must be multiples of 16");
    }
    if (unit == TileUnit::Amx) {
        AmxTiles tiles;
        product_on(tiles, p);
    } else {
        EmulatedTiles tiles;
        product_on(tiles, p);
    }
}

std::optional<TileUnit> tile_unit() {
    const int chosen = chosen_unit.load(std::memory_order_relaxed);
    if (chosen == kDetected) return detected_unit();
    if (chosen == kNone) return std::nullopt;
    return static_cast<TileUnit>(chosen);
}

void use_tile_unit(std::optional<TileUnit> unit) {
    chosen_unit.store(unit ? static_cast<int>(*unit) : kNone, std::memory_order_relaxed);
}

void use_detected_tile_unit() { chosen_unit.store(kDetected, std::memory_order_relaxed); }

}  // namespace lmforge::backend
