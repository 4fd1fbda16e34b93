// Learning-rate schedules: linear warm-up, lr·(step + 1)/warmup_steps, then from the peak down
// to lr·min_lr_ratio at the last step along a cosine or a line, or held constant.
#pragma once

#include <cstdint>
#include <string>

namespace lmforge {

struct LrSchedule {
    enum class Kind { Cosine, Linear, Constant };
    Kind kind = Kind::Cosine;
    double lr = 6e-4;
    double min_lr_ratio = 0.1;
    int64_t warmup_steps = 0;
    int64_t total_steps = 1;

    static Kind parse_kind(const std::string& name);  // "cosine" | "linear" | "constant"
    double at(int64_t step) const;                     // 0-based step
};

}  // namespace lmforge
