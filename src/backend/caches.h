// The data caches of the cores this process may run on, as sysfs describes them: how much a
// kernel's data may be served from each level rather than from memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmforge::backend {

struct CacheLevel {
    int level = 0;      // 1, 2, 3, ...
    int64_t bytes = 0;  // every instance of the level among these cores, each counted once
};

// The data and unified caches, by level, smallest level first; empty where sysfs says
// nothing (not Linux, or a container without /sys).
std::vector<CacheLevel> data_caches();

// sysfs's "32768K" (or "1M", "512"): bytes; 0 for anything else.
int64_t parse_cache_size(const std::string& text);

}  // namespace lmforge::backend
