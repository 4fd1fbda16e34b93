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

std::vector<int> own_cpus() {
    std::vector<int> cpus;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
    return cpus;
}

// The launcher is not bound the way it binds its children, and it lives in the same container
// or job allocation: its set is what the run's processes could share (the host's online count
// would also count cores a cpuset keeps from them).
int launcher_cores() {
    cpu_set_t set;
    if (sched_getaffinity(getppid(), sizeof(set), &set) == 0) return CPU_COUNT(&set);
    return hardware_threads();
}

void set_threads(int threads) {
    if (threads > 0) omp_set_num_threads(threads);
}

int max_threads() { return omp_get_max_threads(); }

}  // namespace lmforge::backend
