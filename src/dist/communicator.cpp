// What every communicator shares: how ranks split work, and how they agree on rank 0's.
#include "dist/communicator.h"

#include <fmt/format.h>

#include <exception>

#include "core/error.h"

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

std::vector<int64_t> shard_counts(int64_t n, int world) {
    std::vector<int64_t> counts(static_cast<size_t>(world), n / world);
    for (int r = 0; r < n % world; r++) counts[static_cast<size_t>(r)]++;
    return counts;
}

}  // namespace lmforge
