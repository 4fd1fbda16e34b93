#include "backend/caches.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "backend/threads.h"

namespace lmforge::backend {

namespace {

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

}  // namespace

int64_t parse_cache_size(const std::string& text) {
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') digits++;
    if (digits == 0 || digits > 12) return 0;
    const int64_t n = std::stoll(text.substr(0, digits));
    const std::string unit = text.substr(digits);
    if (unit.empty()) return n;
    if (unit == "K") return n << 10;
    if (unit == "M") return n << 20;
    if (unit == "G") return n << 30;
    return 0;
}

std::vector<CacheLevel> data_caches() {
    // Each instance once, by the cores that share it: two cores of one L3 hold one L3.
    std::map<int, std::map<std::string, int64_t>> levels;
    for (const int cpu : own_cpus()) {
        for (int index = 0;; index++) {
            const std::string dir = fmt::format("/sys/devices/system/cpu/cpu{}/cache/index{}/", cpu, index);
            const std::string level = first_line(dir + "level");
            if (level.empty()) break;
            if (first_line(dir + "type") == "Instruction") continue;
            levels[std::atoi(level.c_str())][first_line(dir + "shared_cpu_list")] =
                parse_cache_size(first_line(dir + "size"));
        }
    }
    std::vector<CacheLevel> caches;
    for (const auto& [level, instances] : levels) {
        CacheLevel c{.level = level, .bytes = 0};
        for (const auto& [cores, bytes] : instances) c.bytes += bytes;
        if (level > 0 && c.bytes > 0) caches.push_back(c);
    }
    return caches;
}

}  // namespace lmforge::backend
