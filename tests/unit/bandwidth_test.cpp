// The memory bandwidth bench's roofline divides by (backend/bandwidth.h). Only what holds on
// any machine at any load is tested: nothing here depends on how fast the memory is.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/bandwidth.h"
#include "backend/caches.h"

namespace lmforge {
namespace {

TEST(PeakBandwidth, MeasuredOnceAsAFiniteRate) {
    // A positive, finite rate, and the same one when asked again: measured once, then
    // remembered, so bench's table and its JSON line agree.
    const double first = backend::measured_bandwidth_gbs();
    EXPECT_TRUE(std::isfinite(first) && first > 0) << first;
    EXPECT_EQ(backend::measured_bandwidth_gbs(), first);
}

TEST(PeakBandwidth, ArraysAreFarLargerThanACache) {
    const int64_t bytes = backend::bandwidth_array_bytes();
    EXPECT_GE(bytes, int64_t{128} << 20);
    EXPECT_LE(bytes, int64_t{1} << 30);
    EXPECT_EQ(bytes % 64, 0);
}

TEST(PeakBandwidth, LevelsEndWithMemoryAndAreRemembered) {
    const std::vector<backend::MemoryLevel> levels = backend::measured_memory_levels();
    ASSERT_FALSE(levels.empty());
    EXPECT_EQ(levels.back().name, "memory");
    EXPECT_EQ(levels.back().bytes, 0);
    EXPECT_EQ(levels.back().gbs, backend::measured_bandwidth_gbs());
    for (size_t i = 0; i < levels.size(); i++) {
        EXPECT_TRUE(std::isfinite(levels[i].gbs) && levels[i].gbs > 0) << levels[i].name;
        if (i + 1 < levels.size()) {
            EXPECT_GT(levels[i].bytes, 0) << levels[i].name;  // a cache holds so much
        }
    }
    const std::vector<backend::MemoryLevel> again = backend::measured_memory_levels();
    ASSERT_EQ(again.size(), levels.size());
    for (size_t i = 0; i < levels.size(); i++) EXPECT_EQ(again[i].gbs, levels[i].gbs);
}

TEST(PeakBandwidth, MeasuredAgainKeepsTheHigherFigures) {
    const std::vector<backend::MemoryLevel> first = backend::measured_memory_levels();
    const std::vector<backend::MemoryLevel> again = backend::remeasured_memory_levels();
    ASSERT_EQ(again.size(), first.size());
    for (size_t i = 0; i < first.size(); i++) EXPECT_GE(again[i].gbs, first[i].gbs) << first[i].name;
    EXPECT_EQ(backend::measured_bandwidth_gbs(), again.back().gbs);
}

TEST(PeakBandwidth, LeastTimeTakesEachCachesShareFirst) {
    // 250 MB through 50 MB of L2 at 500 GB/s, 100 MB of L3 at 200 GB/s, memory at 50 GB/s:
    // 0.1 + 0.5 + 2 ms.
    const std::vector<backend::MemoryLevel> levels = {
        {"L2", 50'000'000, 500}, {"L3", 100'000'000, 200}, {"memory", 0, 50}};
    EXPECT_DOUBLE_EQ(backend::least_memory_seconds(250e6, levels), 2.6e-3);
    EXPECT_DOUBLE_EQ(backend::least_memory_seconds(40e6, levels), 0.08e-3);
}

TEST(PeakBandwidth, CacheSizesAsSysfsWritesThem) {
    EXPECT_EQ(backend::parse_cache_size("32768K"), int64_t{32} << 20);
    EXPECT_EQ(backend::parse_cache_size("1M"), int64_t{1} << 20);
    EXPECT_EQ(backend::parse_cache_size("512"), 512);
    EXPECT_EQ(backend::parse_cache_size(""), 0);
    EXPECT_EQ(backend::parse_cache_size("12Q"), 0);
}

}  // namespace
}  // namespace lmforge
