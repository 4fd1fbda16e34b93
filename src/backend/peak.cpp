#include "backend/peak.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "backend/amx_tiles.h"
#include "backend/best_figures.h"

namespace lmforge::backend {

namespace {

// Each loop keeps as many independent accumulators as the register file holds, so the FMA
// units never wait on a previous result, and returns a value the compiler must compute.
// Target attributes compile them whatever -march says; the CPU is asked before calling.
// Returns flops done.

__attribute__((target("avx2,fma"))) double fma_avx2(long iterations, float& sink) {
    __m256 acc[12];
    for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps(1e-3f * static_cast<float>(i));
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (long k = 0; k < iterations; k++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], m, c);
    }
    for (int i = 1; i < 12; i++) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    float lanes[8];
    _mm256_storeu_ps(lanes, acc[0]);
    sink += lanes[0];
    return static_cast<double>(iterations) * 12 * 8 * 2;
}

__attribute__((target("avx512f"))) double fma_avx512(long iterations, float& sink) {
    __m512 acc[24];
    for (int i = 0; i < 24; i++) acc[i] = _mm512_set1_ps(1e-3f * static_cast<float>(i));
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (long k = 0; k < iterations; k++) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; i++) acc[i] = _mm512_fmadd_ps(acc[i], m, c);
    }
    for (int i = 1; i < 24; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    float lanes[16];
    _mm512_storeu_ps(lanes, acc[0]);
    sink += lanes[0];
    return static_cast<double>(iterations) * 24 * 16 * 2;
}

// vdpbf16ps: 16 lanes, each adding two bf16 products: 64 flops per instruction.
__attribute__((target("avx512f,avx512bf16"))) double dot_bf16(long iterations, float& sink) {
    __m512 acc[24];
    for (int i = 0; i < 24; i++) acc[i] = _mm512_set1_ps(1e-3f * static_cast<float>(i));
    const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3F80);  // 1.0, 2.0 in bf16
    const __m512bh y = (__m512bh)_mm512_set1_epi16(0x3400);  // 2^-23: sums stay finite
    for (long k = 0; k < iterations; k++) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; i++) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
    }
    for (int i = 1; i < 24; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    float lanes[16];
    _mm512_storeu_ps(lanes, acc[0]);
    sink += lanes[0];
    return static_cast<double>(iterations) * 24 * 16 * 4;
}

// tdpbf16ps: a 16 x 16 fp32 tile adds the products of a 16 x 32 bf16 tile and a 32 x 16 one,
// 16384 flops per instruction, about 16 times a vdpbf16ps's work: so a sixteenth of the
// iterations keeps a run near the others' length. Four accumulators (tiles 0-3) of two A
// (4, 5) and two B (6, 7) tiles, as a GEMM's micro-kernel holds them, so no product waits on
// the one before it.
__attribute__((target("amx-tile,amx-bf16"))) double tile_bf16(long iterations, float& sink) {
    alignas(64) uint16_t a[16 * 32], b[16 * 32];
    alignas(64) float c[16 * 16];
    std::fill(a, a + 16 * 32, uint16_t{0x3F80});  // 1.0 in bf16
    std::fill(b, b + 16 * 32, uint16_t{0x3400});  // 2^-23: sums stay finite
    load_tile_config(TileConfig::full());
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a, 64);
    _tile_loadd(6, b, 64);
    _tile_loadd(7, b, 64);
    const long rounds = iterations / 16;
    for (long k = 0; k < rounds; k++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, 64);
    _tile_release();  // the thread's tile state back to its initial, cheap to switch, state
    sink += c[0];
    return static_cast<double>(rounds) * 4 * 16 * 16 * 32 * 2;
}

double scalar(long iterations, float& sink) {
    float acc[8];
    for (int i = 0; i < 8; i++) acc[i] = 1e-3f * static_cast<float>(i);
    for (long k = 0; k < iterations; k++) {
        for (float& a : acc) a = a * 0.999999f + 1e-7f;
    }
    for (const float a : acc) sink += a;
    return static_cast<double>(iterations) * 8 * 2;
}

using Loop = double (*)(long, float&);

struct PeakLoop {
    Loop loop;
    const char* unit;
};

PeakLoop loop_for(PeakKind kind) {
    __builtin_cpu_init();
    if (kind == PeakKind::Bf16Tile && bf16_tiles_usable()) return {tile_bf16, "tdpbf16ps (AMX-BF16)"};
    if (kind == PeakKind::Bf16Tile) kind = PeakKind::Bf16Dot;
    if (kind == PeakKind::Bf16Dot && __builtin_cpu_supports("avx512bf16")) return {dot_bf16, "vdpbf16ps (AVX512_BF16)"};
    if (__builtin_cpu_supports("avx512f")) return {fma_avx512, "fp32 FMA (AVX-512)"};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {fma_avx2, "fp32 FMA (AVX2)"};
    return {scalar, "fp32 scalar"};
}

double measure(Loop loop) {
    // Each thread times its own short runs and keeps its best; the peak is the sum. A run is
    // spoilt when its thread loses the core (another process, another program's threads
    // spinning at their barriers), which over forty runs of ~1 ms is seldom all of them. Timing
    // all threads together instead, best of eight, read 26-36 GFLOP/s on a 190 GFLOP/s machine
    // while a second trainer started beside it.
    constexpr long kIterations = 1L << 19;  // ~1 ms per run at a few GHz
    constexpr int kRuns = 40;
    double total = 0;
    float sink = 0;
#pragma omp parallel reduction(+ : total, sink)
    {
        double best = 0;
        for (int run = 0; run < kRuns; run++) {
            const auto start = std::chrono::steady_clock::now();
            const double flops = loop(kIterations, sink);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            best = std::max(best, flops / seconds / 1e9);
        }
        total += best;
    }
    volatile float keep = sink;  // the results are used, so no loop is optimised away
    (void)keep;
    return total;
}

// What was measured, by kind and thread count.
std::mutex peaks_mutex;
std::map<std::pair<PeakKind, int>, double> peaks;

// The measurement set against the best on record for this CPU (backend/best_figures.h).
double measured_or_best(PeakKind kind) {
    const PeakLoop l = loop_for(kind);
    return best_figure(fmt::format("peak GFLOP/s, {}, {} threads", l.unit, omp_get_max_threads()), measure(l.loop));
}

}  // namespace

double measured_peak_gflops(PeakKind kind) {
    const std::lock_guard lock(peaks_mutex);
    const auto key = std::make_pair(kind, omp_get_max_threads());
    auto it = peaks.find(key);
    if (it == peaks.end()) it = peaks.emplace(key, measured_or_best(kind)).first;
    return it->second;
}

const char* peak_unit(PeakKind kind) { return loop_for(kind).unit; }

double remeasured_peak_gflops(PeakKind kind) {
    const double again = measured_or_best(kind);
    const std::lock_guard lock(peaks_mutex);
    double& best = peaks[std::make_pair(kind, omp_get_max_threads())];
    best = std::max(best, again);
    return best;
}

}  // namespace lmforge::backend
