// The communicator of a run with one process: every collective is the identity.
#include <algorithm>

#include "dist/comm_single.h"

namespace lmforge {

std::vector<int64_t> shard_counts(int64_t n, int world) {
    std::vector<int64_t> counts(static_cast<size_t>(world), n / world);
    for (int r = 0; r < n % world; r++) counts[static_cast<size_t>(r)]++;
    return counts;
}

}  // namespace lmforge
