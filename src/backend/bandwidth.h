// The machine's memory bandwidth, measured rather than assumed: from memory, and from each cache
// level. The denominators of the bandwidth limits in bench's roofline (train/roofline.h) and
// of kernels_bench's %bandwidth.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmforge::backend {

// GB/s (1e9 bytes a second) from memory: a STREAM-like triad on the OpenMP threads in use, each
// thread sweeping its own slice of two arrays far larger than the last-level cache; each
// thread's best of eight runs, summed over the threads, or the best on record for this CPU if
// higher (backend/best_figures.h). Measured once per thread count, then remembered; about a
// tenth of a second on a 2-core machine, most of it the arrays' first touch.
double measured_bandwidth_gbs();

// The bytes of each of the triad's two arrays: four times the last-level caches of the cores
// this process may run on (sysfs; each shared cache counted once), at least 128 MiB, at most
// 1 GiB.
int64_t bandwidth_array_bytes();

// A place a kernel's bytes may come from: a cache level, holding `bytes` on the cores this
// process may run on, or memory (bytes 0: no limit).
struct MemoryLevel {
    std::string name;  // "L2", "L3", "memory"
    int64_t bytes = 0;
    double gbs = 0;
};

// Each cache level from L2 on (backend/caches.h) with the same triad over arrays it holds, but
// not the levels before it, then memory (measured_bandwidth_gbs()): fastest first. L1 is left
// out; no kernel of a model worth timing has data that small. Measured once per thread count,
// then remembered; a few milliseconds more than memory's.
std::vector<MemoryLevel> measured_memory_levels();

// Measures every level again and remembers the higher figure of each. A shared host's memory
// (a virtual machine's) has run at 38 and at 110 GB/s within the same hour: a kernel timed in a
// good minute then seems to beat the figure of a bad one.
std::vector<MemoryLevel> remeasured_memory_levels();

// The least time `bytes` of traffic can take: as many as each cache level holds at its speed,
// fastest first, the rest at memory's. levels: as measured_memory_levels() gives them.
double least_memory_seconds(double bytes, const std::vector<MemoryLevel>& levels);

}  // namespace lmforge::backend
