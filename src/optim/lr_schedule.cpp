#include "optim/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace lmforge {

LrSchedule::Kind LrSchedule::parse_kind(const std::string& name) {
    if (name == "cosine") return Kind::Cosine;
    if (name == "linear") return Kind::Linear;
    if (name == "constant") return Kind::Constant;
    throw InputError(fmt::format("unknown schedule '{}'", name), "use cosine, linear or constant");
}

double LrSchedule::at(int64_t step) const {
    if (step < warmup_steps) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    if (kind == Kind::Constant) return lr;
    const double min_lr = lr * min_lr_ratio;
    // 0 at the end of warm-up, 1 at the last step.
    const double span = static_cast<double>(std::max<int64_t>(1, total_steps - 1 - warmup_steps));
    const double progress = std::clamp(static_cast<double>(step - warmup_steps) / span, 0.0, 1.0);
    if (kind == Kind::Linear) return lr - progress * (lr - min_lr);
    return min_lr + 0.5 * (1.0 + std::cos(std::numbers::pi * progress)) * (lr - min_lr);
}

}  // namespace lmforge
