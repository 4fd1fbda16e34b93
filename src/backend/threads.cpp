#include "backend/threads.h"

#include <omp.h>
#include <sched.h>

namespace lmforge::backend {

int hardware_threads() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
    return omp_get_num_procs();
}

void set_threads(int threads) {
    if (threads > 0) omp_set_num_threads(threads);
}

int max_threads() { return omp_get_max_threads(); }

}  // namespace lmforge::backend
