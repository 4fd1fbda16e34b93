// What every communicator shares: how ranks split work, and how they agree on rank 0's.
#include "distributed/communicator.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>

#include "backend/threads.h"
#include "core/error.h"
#include "core/log.h"

namespace lmforge {

void on_lead_agreed(Communicator& comm, const std::function<void()>& work) {
    std::exception_ptr failure;
    if (comm.rank() == 0) {
        try {
            work();
        } catch (...) {
            failure = std::current_exception();
        }
    }
    const bool failed = comm.size() > 1 ? comm.allreduce_max(failure ? 1.0 : 0.0) > 0 : failure != nullptr;
    if (failure) std::rethrow_exception(failure);
    if (failed) throw InputError(fmt::format("rank {}: rank 0 could not start the run (its error says why)", comm.rank()));
}

namespace {

// A variable srun sets, as a whole number of at least `lo`.
int slurm_number(const char* name, const char* text, int lo) {
    int value = 0;
    const char* end = text + std::char_traits<char>::length(text);
    const auto [at, ec] = std::from_chars(text, end, value);
    if (ec != std::errc() || at != end || at == text || value < lo) {
        throw InputError(fmt::format("{} = \"{}\" in the environment: expected a whole number of at least {}", name,
                                     text, lo),
                         "Slurm's srun sets it in each task it starts; unset it outside a Slurm job step");
    }
    return value;
}

}  // namespace

SrunTask srun_task() {
    const char* step = std::getenv("SLURM_STEP_ID");
    const char* procid = std::getenv("SLURM_PROCID");
    const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
    if (step == nullptr || procid == nullptr || tasks == nullptr) return {};
    if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) return {};
    return {slurm_number("SLURM_PROCID", procid, 0), slurm_number("SLURM_STEP_NUM_TASKS", tasks, 1)};
}

int threads_for(int own_cores, int processes_sharing_them) {
    return std::max(1, own_cores / std::max(1, processes_sharing_them));
}

int count_sharing(const std::vector<float>& keys, int rank) {
    int n = 0;
    for (size_t r = 0; r < keys.size() / 2; r++) {
        n += keys[2 * r] == keys[2 * rank] && keys[2 * r + 1] == keys[2 * rank + 1];
    }
    return n;
}

int processes_sharing_cores(Communicator& comm) {
    if (comm.size() == 1) return 1;
    // The machine: its kernel's boot id, which containers on one host share as they share its
    // cores (host names can repeat across a cluster's containers); the host name without it.
    std::string where;
    std::ifstream("/proc/sys/kernel/random/boot_id") >> where;
    if (where.empty()) {
        char host[256] = {};
        ::gethostname(host, sizeof(host) - 1);
        where = host;
    }
    for (int cpu : backend::own_cpus()) {
        where += ',';
        where += std::to_string(cpu);  // (appended apart: GCC 12 warns on "," + to_string)
    }
    // 48 bits of a hash of (machine, cores), as two floats of 24 exact bits: what the gather moves.
    const uint64_t key = std::hash<std::string>{}(where);
    std::vector<float> keys(2 * static_cast<size_t>(comm.size()), 0.0f);
    keys[2 * comm.rank()] = static_cast<float>(key & 0xFFFFFF);
    keys[2 * comm.rank() + 1] = static_cast<float>((key >> 24) & 0xFFFFFF);
    comm.allgather_in_place(keys.data(), std::vector<int64_t>(comm.size(), 2));
    return count_sharing(keys, comm.rank());
}

int default_threads(Communicator& comm) {
    const int own = backend::hardware_threads();
    if (comm.name() != "mpi") return own;
    const int threads = threads_for(own, processes_sharing_cores(comm));
    const int launcher = backend::launcher_cores(), share = std::max(1, launcher / comm.local_size());
    if (comm.rank() == 0 && threads < share) {
        log::warn("this process may run on {} of the launcher's {} cores (its binding): {} thread{} where {} "
                  "would fit; mpirun --bind-to none, or --map-by slot:PE={}, gives each process its share",
                  own, launcher, threads, threads == 1 ? "" : "s", share, share);
    }
    return threads;
}

std::vector<int64_t> shard_counts(int64_t n, int world) {
    std::vector<int64_t> counts(static_cast<size_t>(world), n / world);
    for (int r = 0; r < n % world; r++) counts[static_cast<size_t>(r)]++;
    return counts;
}

}  // namespace lmforge
