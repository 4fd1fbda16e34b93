// Large aligned allocations. Blocks of at least kMappedBytes are mapped afresh: the kernel
// hands out zero pages, and only the pages a run touches count towards its resident set (a
// gradient buffer that a forward-only model never writes costs no memory). Smaller blocks
// come from the heap and are zeroed here.
#include "core/aligned_buffer.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace lmforge {

namespace {

constexpr size_t kMappedBytes = size_t{1} << 20;

[[noreturn]] void out_of_memory(size_t bytes) {
    throw Error(fmt::format("out of memory allocating {:.1f} MiB", bytes / 1048576.0),
                "use a smaller model, batch or sequence length");
}

}  // namespace

void* aligned_zeroed_alloc(size_t bytes) {
    if (bytes == 0) return nullptr;
    if (bytes >= kMappedBytes) {  // page-aligned, so kAlignment-aligned too
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) out_of_memory(bytes);
        return p;
    }
    const size_t rounded = static_cast<size_t>(round_up(static_cast<int64_t>(bytes), kAlignment));
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) out_of_memory(bytes);
    std::memset(p, 0, rounded);
    return p;
}

void aligned_free(void* p, size_t bytes) {
    if (p == nullptr) return;
    if (bytes >= kMappedBytes) {
        munmap(p, bytes);
    } else {
        std::free(p);
    }
}

}  // namespace lmforge
