#include "backend/threads.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

namespace lmforge::backend {

int hardware_threads() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
    return omp_get_num_procs();
}

int online_cores() {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<int>(n) : hardware_threads();
}

void set_threads(int threads) {
    if (threads > 0) omp_set_num_threads(threads);
}

int max_threads() { return omp_get_max_threads(); }

}  // namespace lmforge::backend
