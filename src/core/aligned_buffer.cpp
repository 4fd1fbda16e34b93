// Large aligned allocations. Big blocks come from mmap through aligned_alloc, so their pages
// are zero already and only touched pages count towards the resident set.
#include "core/aligned_buffer.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace lmforge {

void* aligned_zeroed_alloc(size_t bytes) {
    if (bytes == 0) return nullptr;
    const size_t rounded = static_cast<size_t>(round_up(static_cast<int64_t>(bytes), kAlignment));
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) {
        throw Error(fmt::format("out of memory allocating {:.1f} MiB", bytes / 1048576.0),
                    "use a smaller model, batch or sequence length");
    }
    std::memset(p, 0, rounded);
    return p;
}

void aligned_free(void* p) { std::free(p); }

}  // namespace lmforge
