#include "train/time_budget.h"

#include <algorithm>
#include <cmath>

namespace lmforge {

int64_t steps_within_budget(const BudgetFigures& f, int64_t max_steps) {
    const auto share = [](double seconds, int64_t every) { return every > 0 ? seconds / static_cast<double>(every) : 0; };
    const double per_step = f.step_seconds + share(f.eval_seconds, f.eval_every) +
                            share(f.choice_seconds, f.choice_every) + share(f.sample_seconds, f.sample_every);
    const double at_end = f.eval_seconds + f.choice_seconds + f.sample_seconds * static_cast<double>(f.samples_at_end);
    const double left = f.budget_seconds - f.spent_seconds - at_end;
    const double more = per_step > 0 ? std::floor(left / per_step) : 0;
    const int64_t fit = more > 0 ? f.steps_done + static_cast<int64_t>(std::min(more, 1e15)) : f.steps_done;
    return std::clamp<int64_t>(fit, std::min(f.steps_done + 1, max_steps), max_steps);
}

}  // namespace lmforge
