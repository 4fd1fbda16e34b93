#include "core/profiler.h"

namespace lmforge {

void Profiler::lap(const char* name) {
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    for (auto& [n, total] : totals_) {
        if (n == name) {
            total += seconds;
            return;
        }
    }
    totals_.emplace_back(name, seconds);
}

}  // namespace lmforge
