// Large aligned allocations. Blocks of at least kMappedBytes are mapped afresh, on huge pages
// where Linux has them: the kernel hands out zero pages, and only the pages a run touches
// count towards its resident set (a gradient buffer that a forward-only model never writes
// costs no memory). Smaller blocks come from the heap and are zeroed here.
#include "core/aligned_buffer.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace lmforge {

namespace {

constexpr size_t kMappedBytes = size_t{1} << 20;
constexpr size_t kHugePage = size_t{2} << 20;  // x86-64's; elsewhere madvise may find none

[[noreturn]] void out_of_memory(size_t bytes) {
    throw Error(fmt::format("out of memory allocating {:.1f} MiB", bytes / 1048576.0),
                "use a smaller model, batch or sequence length");
}

void* map_pages(size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) out_of_memory(bytes);
    return p;
}

// Maps `bytes` from a huge-page boundary and asks for transparent huge pages there: where THP
// is in "madvise" mode (Debian's default, and this project's test machines') Linux gives them
// only where asked. A step sweeps hundreds of MiB of activations, and on 4 KiB pages every
// kernel pays the TLB misses: config C's bf16 step took 475-503 ms on 4 KiB pages, 450-456 on
// huge ones (Sapphire Rapids class Xeon, 2 threads, alternated). A touch makes its whole huge
// page resident, but untouched ones still cost nothing. Where THP is "never", or the kernel
// has none (madvise fails), the block stays on small pages.
void* map_on_huge_pages(size_t bytes) {
    if (bytes > SIZE_MAX - kHugePage) out_of_memory(bytes);
    const size_t span = bytes + kHugePage;
    void* mapped = map_pages(span);
    const auto start = reinterpret_cast<uintptr_t>(mapped);
    const uintptr_t begin = (start + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
    const auto page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t end = begin + static_cast<uintptr_t>(round_up(static_cast<int64_t>(bytes), page));
    // Give back the slack before begin and after end; a failure leaves it mapped, unused.
    if (begin > start) munmap(mapped, begin - start);
    if (start + span > end) munmap(reinterpret_cast<void*>(end), start + span - end);
    void* p = reinterpret_cast<void*>(begin);
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

}  // namespace

void* aligned_zeroed_alloc(size_t bytes) {
    if (bytes == 0) return nullptr;
    if (bytes >= kHugePage) return map_on_huge_pages(bytes);  // it holds one at least
    if (bytes >= kMappedBytes) return map_pages(bytes);
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
