// core/: aligned buffers (zero, resident only where written, on huge-page boundaries), arena
// alignment and bounds, RNG determinism and distributions, error formatting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <numbers>
#include <set>

#include "core/aligned_buffer.h"
#include "core/arena.h"
#include "core/error.h"
#include "core/rng.h"

namespace lmforge {
namespace {

TEST(Arena, AlignsEveryAllocationAndRefusesOverflow) {
    Arena arena(Arena::bytes_for(3 * sizeof(float)) + Arena::bytes_for(100));
    float* a = arena.alloc<float>(3);
    auto* b = static_cast<std::byte*>(arena.alloc_bytes(100));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kAlignment, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % kAlignment, 0u);
    EXPECT_EQ(a[0], 0.0f);  // zeroed
    EXPECT_THROW(arena.alloc<float>(1), Error);
    arena.reset(0);
    EXPECT_EQ(arena.alloc<float>(3), a);  // mark/reset reuses
}

// This process's resident set in bytes (/proc/self/statm's second field, in pages).
double resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    double size = 0, resident = 0;
    statm >> size >> resident;
    return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

TEST(AlignedBuffer, IsZeroAndCostsMemoryOnlyWhereWritten) {
    // A gradient buffer that a forward-only model never writes must not count towards the
    // resident set (lmforge sample of GPT-2 124M: 1455 -> 979 MiB peak).
    constexpr size_t n = size_t{64} << 18;  // 64 MiB of floats
    const double before = resident_bytes();
    AlignedBuffer<float> big(n);
    EXPECT_LT(resident_bytes() - before, 8.0 * (1 << 20));
    double sum = 0;
    for (size_t i = 0; i < n; i += 1024) sum += big[i];
    EXPECT_EQ(sum, 0.0);
    for (size_t i = 0; i < n; i += 1024) big[i] = 1.0f;  // one write per page
    EXPECT_GT(resident_bytes() - before, 56.0 * (1 << 20));
    AlignedBuffer<float> small(100);  // from the heap, zeroed there
    for (size_t i = 0; i < small.size(); i++) EXPECT_EQ(small[i], 0.0f);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % kAlignment, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % kAlignment, 0u);
}

// This process's mapped address space in bytes (/proc/self/statm's first field, in pages).
double mapped_bytes() {
    std::ifstream statm("/proc/self/statm");
    double size = 0;
    statm >> size;
    return size * static_cast<double>(sysconf(_SC_PAGESIZE));
}

TEST(AlignedBuffer, BlocksOfAHugePageStartOnItsBoundaryAndFreeCleanly) {
    // A 2 MiB boundary lets the kernel back a block with huge pages from its first byte.
    for (const size_t bytes : {size_t{2} << 20, (size_t{3} << 20) + 100, size_t{17} << 20}) {
        AlignedBuffer<std::byte> block(bytes);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(block.data()) % (size_t{2} << 20), 0u) << bytes << " bytes";
        block[block.size() - 1] = std::byte{1};  // the last byte is mapped
    }
    // Freed blocks leave nothing resident, and none of the slack mapped to align them.
    const double resident = resident_bytes(), mapped = mapped_bytes();
    for (int i = 0; i < 8; i++) {
        AlignedBuffer<float> block((size_t{8} << 18) + 3);
        for (size_t j = 0; j < block.size(); j += 1024) block[j] = 1.0f;
    }
    EXPECT_LT(resident_bytes() - resident, 8.0 * (1 << 20));
    EXPECT_LT(mapped_bytes() - mapped, 4.0 * (1 << 20));
}

TEST(Rng, SameSeedSameStreamAndStateRoundTrips) {
    Rng a(42), b(42), c(43);
    EXPECT_EQ(a.next_u64(), b.next_u64());
    EXPECT_NE(a.next_u64(), c.next_u64());
    const Rng::State saved = a.state();
    const uint64_t next = a.next_u64();
    Rng d(0);
    d.set_state(saved);
    EXPECT_EQ(d.next_u64(), next);
}

TEST(Rng, UniformBelowAndNormalHaveTheRightShape) {
    Rng rng(7);
    std::set<uint64_t> seen;
    for (int i = 0; i < 1000; i++) {
        const uint64_t x = rng.below(10);
        ASSERT_LT(x, 10u);
        seen.insert(x);
        const float u = rng.uniform();
        ASSERT_GE(u, 0.0f);
        ASSERT_LT(u, 1.0f);
    }
    EXPECT_EQ(seen.size(), 10u);
    std::vector<float> x(100001);  // odd: the last element of a pair is handled
    rng.fill_normal(x.data(), static_cast<int64_t>(x.size()), 1.0f, 2.0f);
    double mean = 0, var = 0;
    for (float v : x) mean += v;
    mean /= x.size();
    for (float v : x) var += (v - mean) * (v - mean);
    var /= x.size();
    EXPECT_NEAR(mean, 1.0, 0.03);
    EXPECT_NEAR(std::sqrt(var), 2.0, 0.03);
}

// fill_normal draws its uniforms in blocks and transforms them on every thread: the numbers
// must be those of Box-Muller over the stream in order, whatever the threads, across blocks
// and with an odd count, and the stream must go on after them as after a plain loop.
TEST(Rng, FillNormalIsBoxMullerOverTheStreamInOrder) {
    const int64_t n = 3 * (int64_t{1} << 14) * 2 + 7;
    Rng filled(42), plain(42);
    std::vector<float> x(n);
    filled.fill_normal(x.data(), n, 0.5f, 3.0f);
    for (int64_t i = 0; i < n; i += 2) {
        const double u1 = 1.0 - static_cast<double>(plain.next_u64() >> 11) * 0x1.0p-53;
        const double u2 = static_cast<double>(plain.next_u64() >> 11) * 0x1.0p-53;
        const double r = std::sqrt(-2.0 * std::log(u1)), theta = 2.0 * std::numbers::pi * u2;
        ASSERT_EQ(x[i], static_cast<float>(0.5 + 3.0 * r * std::cos(theta))) << i;
        if (i + 1 < n) {
            ASSERT_EQ(x[i + 1], static_cast<float>(0.5 + 3.0 * r * std::sin(theta))) << i + 1;
        }
    }
    EXPECT_EQ(filled.next_u64(), plain.next_u64());
}

TEST(Error, OneLineCarriesTheHint) {
    const InputError e("n_head = 0 must be positive", "set n_head to 1 or more");
    EXPECT_EQ(e.one_line(), "n_head = 0 must be positive (HINT: set n_head to 1 or more)");
    EXPECT_EQ(Error("plain").one_line(), "plain");
}

}  // namespace
}  // namespace lmforge
