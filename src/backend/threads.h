// Thread-count control. OpenMP drives our kernels and oneDNN alike (Debian's oneDNN is built
// on the same GNU OpenMP runtime), so one setting governs both.
#pragma once

#include <vector>

namespace lmforge::backend {

int hardware_threads();        // cores this process may run on
std::vector<int> own_cpus();   // which: their indices, ascending
int launcher_cores();          // cores the parent process (mpirun, orted, slurmstepd) may run on
void set_threads(int threads);  // 0 keeps the default (OMP_NUM_THREADS, else every core)
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
