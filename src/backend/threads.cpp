#include "backend/threads.h"

#include <fmt/format.h>
#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include "core/error.h"

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

int thread_limit() { return kThreadsPerCore * hardware_threads(); }

// Every command's thread count passes here, so the bound holds for all: libgomp crashes starting
// 100000 threads, prints its own error at 40000, and 256 on 2 cores spin-wait for minutes.
void set_threads(int64_t threads, const std::string& setting) {
    if (threads < 0) {
        throw InputError(fmt::format("{}: {} threads is not a thread count", setting, threads),
                         "give a positive count, or none for one thread per core");
    }
    if (threads > thread_limit()) {
        throw InputError(fmt::format("{}: {} threads: at most {} are allowed, {} for each of the {} cores this "
                                     "process may run on",
                                     setting, threads, thread_limit(), kThreadsPerCore, hardware_threads()),
                         "threads past the cores only take turns on them: one per core (the default) is fastest");
    }
    if (threads > 0) omp_set_num_threads(static_cast<int>(threads));
}

int max_threads() { return omp_get_max_threads(); }

}  // namespace lmforge::backend
