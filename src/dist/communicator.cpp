// What every communicator shares: how ranks split work, and how they agree on rank 0's.
#include "dist/communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

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

int threads_for(int own_cores, int launcher_cores, int local_processes) {
    const int share = std::max(1, launcher_cores / std::max(1, local_processes));
    return std::clamp(own_cores, 1, share);
}

int default_threads(const Communicator& comm) {
    if (comm.name() != "mpi") return backend::hardware_threads();
    const int here = comm.local_size(), share = std::max(1, backend::launcher_cores() / here);
    const int threads = threads_for(backend::hardware_threads(), backend::launcher_cores(), here);
    if (comm.rank() == 0 && threads < share) {
        log::warn("this process may run on {} of the launcher's {} cores (its binding): {} thread{} where {} "
                  "would fit; mpirun --bind-to none, or --map-by slot:PE={}, gives each process its share",
                  backend::hardware_threads(), backend::launcher_cores(), threads, threads == 1 ? "" : "s", share, share);
    }
    return threads;
}

std::vector<int64_t> shard_counts(int64_t n, int world) {
    std::vector<int64_t> counts(static_cast<size_t>(world), n / world);
    for (int r = 0; r < n % world; r++) counts[static_cast<size_t>(r)]++;
    return counts;
}

}  // namespace lmforge
