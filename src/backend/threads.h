// Thread-count control. OpenMP drives our kernels and oneDNN alike (Debian's oneDNN is built
// on the same GNU OpenMP runtime), so one setting governs both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmforge::backend {

int hardware_threads();        // cores this process may run on
std::vector<int> own_cpus();   // which: their indices, ascending
int launcher_cores();          // cores the parent process (mpirun, orted, slurmstepd) may run on
// The most threads a process may ask for: kThreadsPerCore per core it may run on.
inline constexpr int kThreadsPerCore = 4;
int thread_limit();
// Sets the threads of the parallel regions that follow; 0 keeps the default (OMP_NUM_THREADS,
// else every core). InputError naming `setting` (the flag or config key the count came from),
// the count and the limit for a negative count or one above thread_limit().
void set_threads(int64_t threads, const std::string& setting);
int max_threads();

// The [begin, end) slice of [0, n) that thread `tid` of `nthreads` owns: equal parts, the
// first n % nthreads threads one larger.
struct Range {
    long begin, end;
};
inline Range thread_slice(long n, int tid, int nthreads) {
    const long base = n / nthreads, extra = n % nthreads;
    const long begin = tid * base + (tid < extra ? tid : extra);
    return {begin, begin + base + (tid < extra ? 1 : 0)};
}

}  // namespace lmforge::backend
