#include "backend/bandwidth.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "backend/best_figures.h"
#include "backend/caches.h"
#include "backend/threads.h"
#include "core/aligned_buffer.h"

namespace lmforge::backend {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Each thread's pages are first touched by that thread, in the slices the triad gives it: on a
// machine of several memory nodes they then lie on its own node, as the model's buffers
// written by the kernels' static slices do. (AlignedBuffer maps a large block without touching
// it, so the first write here places each page.)
void first_touch(float* a, float* c, long n) {
#pragma omp parallel
    {
        const Range r = thread_slice(n, omp_get_thread_num(), omp_get_num_threads());
        std::fill(a + r.begin, a + r.end, 0.0f);
        std::fill(c + r.begin, c + r.end, 1.0f);
    }
}

// `passes` triads over [begin, end) of the arrays, a = a ± s·c (alternately, so a stays small).
[[gnu::always_inline]] inline void sweep(float* a, const float* c, long begin, long end, int passes) {
    for (int pass = 0; pass < passes; pass++) {
        const float s = pass % 2 == 0 ? 0.5f : -0.5f;
#pragma omp simd
        for (long i = begin; i < end; i++) a[i] = a[i] + s * c[i];
    }
}

// At the CPU's widest vectors, as the kernels run (the CPU is asked before calling): from a
// cache, 16-byte loads and stores would make the figure the instructions' rate, not the
// cache's. Target attributes compile them whatever -march says.
__attribute__((target("avx512f"))) void sweep_avx512(float* a, const float* c, long begin, long end, int passes) {
    sweep(a, c, begin, end, passes);
}
__attribute__((target("avx2"))) void sweep_avx2(float* a, const float* c, long begin, long end, int passes) {
    sweep(a, c, begin, end, passes);
}
void sweep_baseline(float* a, const float* c, long begin, long end, int passes) { sweep(a, c, begin, end, passes); }

using Sweep = void (*)(float*, const float*, long, long, int);

Sweep widest_sweep() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return sweep_avx512;
    if (__builtin_cpu_supports("avx2")) return sweep_avx2;
    return sweep_baseline;
}

// GB/s of the triad over two arrays of `bytes` each: each thread sweeps its own slice, timing
// its own runs (all threads start each run together) and keeping its best; the figure is the
// sum. A run is spoilt when its thread loses the core (another process, another program's
// threads), which over several runs is seldom all of them: timing the whole team instead read
// the caches at 9 GB/s while a build shared the cores. Where the arrays fit in a cache, a run
// repeats the triad until it moves 64 MiB, so that it lasts long enough to time.
//
// The triad updates its first array in place, a = a + s·c, rather than STREAM's a = b + s·c,
// and counts 12 bytes an element: a read, c read, a written. In place there is no
// write-allocate traffic (the line written is the line just read), so every byte counted is a
// byte moved and none moved goes uncounted. STREAM's form reads each line of a before writing
// it, traffic it does not count: on a 2-core Zen 5, alternated in one process, it read 43-46
// GB/s (58-62 counting the write-allocate) where this form read 63-73; in another hour this
// form read 105-119 where an AdamW-like in-place sweep moved 96-100 GB/s of its counted bytes.
// A figure below what the kernels reach would be no bound.
double triad_gbs(int64_t bytes, int runs) {
    const long n = static_cast<long>(bytes / static_cast<int64_t>(sizeof(float)));
    AlignedBuffer<float> a(static_cast<size_t>(n)), c(static_cast<size_t>(n));
    first_touch(a.data(), c.data(), n);
    const int passes = static_cast<int>(std::max<int64_t>(1, 64 * kMiB / (3 * bytes)));
    const Sweep sweep_at_width = widest_sweep();
    double total = 0;
#pragma omp parallel reduction(+ : total)
    {
        const Range r = thread_slice(n, omp_get_thread_num(), omp_get_num_threads());
        const double mine = 3.0 * sizeof(float) * static_cast<double>(r.end - r.begin) * passes;
        double best = 0;
        for (int run = 0; run < runs; run++) {
#pragma omp barrier
            const auto start = std::chrono::steady_clock::now();
            sweep_at_width(a.data(), c.data(), r.begin, r.end, passes);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            best = std::max(best, mine / seconds / 1e9);
        }
        total += best;
    }
    volatile float keep = a[n / 2];  // the stores are used, so no run is optimised away
    (void)keep;
    return total;
}

// A level's triad set against the best on record for this CPU (backend/best_figures.h).
double best_gbs(const std::string& level, double measured) {
    return best_figure(fmt::format("{} GB/s, {} threads", level, omp_get_max_threads()), measured);
}

double memory_gbs() { return best_gbs("memory", triad_gbs(bandwidth_array_bytes(), 8)); }

// Each cache level from L2 on, timed with arrays together a quarter of its size (and at least
// twice what the levels before it hold, or the level is left out: it could not be told apart).
std::vector<MemoryLevel> cache_levels() {
    std::vector<MemoryLevel> levels;
    int64_t before = 0;
    for (const CacheLevel& c : data_caches()) {
        const int64_t footprint = std::max(2 * before, c.bytes / 4) / 128 * 128;
        before += c.bytes;
        if (c.level < 2 || footprint > c.bytes / 2 || footprint == 0) continue;
        const std::string name = fmt::format("L{}", c.level);
        levels.push_back({name, c.bytes, best_gbs(name, triad_gbs(footprint / 2, 20))});
    }
    return levels;
}

// What was measured, by thread count: memory's figure, and the caches' once asked for.
struct Measured {
    double memory = 0;
    std::vector<MemoryLevel> caches;
    bool caches_measured = false;
};
std::mutex measured_mutex;
std::map<int, Measured> measured;

Measured& measured_here() { return measured[omp_get_max_threads()]; }

std::vector<MemoryLevel> with_memory(std::vector<MemoryLevel> levels, double memory) {
    levels.push_back({"memory", 0, memory});
    return levels;
}

int64_t last_level_cache_bytes() {
    const std::vector<CacheLevel> caches = data_caches();
    return caches.empty() ? 0 : caches.back().bytes;
}

}  // namespace

int64_t bandwidth_array_bytes() {
    return std::clamp(4 * last_level_cache_bytes(), 128 * kMiB, 1024 * kMiB);
}

double measured_bandwidth_gbs() {
    const std::lock_guard lock(measured_mutex);
    Measured& m = measured_here();
    if (m.memory == 0) m.memory = memory_gbs();
    return m.memory;
}

std::vector<MemoryLevel> measured_memory_levels() {
    const double memory = measured_bandwidth_gbs();
    const std::lock_guard lock(measured_mutex);
    Measured& m = measured_here();
    if (!m.caches_measured) m.caches = cache_levels();
    m.caches_measured = true;
    return with_memory(m.caches, memory);
}

std::vector<MemoryLevel> remeasured_memory_levels() {
    measured_memory_levels();  // so that each level has a figure to keep the higher of
    const double memory = memory_gbs();
    const std::vector<MemoryLevel> caches = cache_levels();
    const std::lock_guard lock(measured_mutex);
    Measured& m = measured_here();
    m.memory = std::max(m.memory, memory);
    for (size_t i = 0; i < m.caches.size() && i < caches.size(); i++) {
        m.caches[i].gbs = std::max(m.caches[i].gbs, caches[i].gbs);
    }
    return with_memory(m.caches, m.memory);
}

double least_memory_seconds(double bytes, const std::vector<MemoryLevel>& levels) {
    double left = bytes, seconds = 0;
    for (const MemoryLevel& level : levels) {
        const double here = level.bytes > 0 ? std::min(left, static_cast<double>(level.bytes)) : left;
        seconds += here / (level.gbs * 1e9);
        left -= here;
    }
    return seconds;
}

}  // namespace lmforge::backend
