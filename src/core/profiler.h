// Wall time per named phase (a kernel family: "matmul_fwd", "attention_bwd", ...), summed
// over calls. The timed code calls start() once, then lap(name) after each phase: a lap
// charges the time since the previous one to `name`. Kernels are synchronous (their threads
// join before returning), so laps measure them exactly.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace lmforge {

class Profiler {
public:
    void start() { last_ = Clock::now(); }
    void lap(const char* name);

    // (name, total seconds), in order of first appearance.
    const std::vector<std::pair<std::string, double>>& totals() const { return totals_; }
    void reset() { totals_.clear(); }

private:
    using Clock = std::chrono::steady_clock;
    Clock::time_point last_ = Clock::now();
    std::vector<std::pair<std::string, double>> totals_;
};

}  // namespace lmforge
