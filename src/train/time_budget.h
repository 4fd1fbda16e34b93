// train.time_budget: a run given minutes instead of steps. Its first steps measure the speed
// (with the step-0 evaluation and samples), and from those figures the run's length in steps
// is fixed once, before the schedule's length matters (during warm-up), and kept by every
// resume. A pure function of the figures, so that it is tested without a clock.
#pragma once

#include <cstdint>

namespace lmforge {

// The steps done when the length is fixed: what warm-up must cover (config validation).
inline constexpr int64_t kBudgetCalibrationSteps = 10;

struct BudgetFigures {
    double budget_seconds = 0;  // train.time_budget
    double spent_seconds = 0;   // of it, so far
    int64_t steps_done = 0;
    double step_seconds = 0;     // one step, as measured
    double eval_seconds = 0;     // one evaluation (0: none)
    int64_t eval_every = 0;      // steps between evaluations (0: only the final one)
    double choice_seconds = 0;   // one multiple-choice evaluation (0: none)
    int64_t choice_every = 0;    // steps between them (0: only the final one)
    double sample_seconds = 0;   // one sample (0: none)
    int64_t sample_every = 0;    // steps between samples in the log (0: none)
    int64_t samples_at_end = 0;  // sample.count
};

// The run's length: steps_done plus the steps that fit in what is left of the budget once the
// final evaluations and samples are set aside, each step carrying its share of the periodic
// evaluations (validation and multiple-choice) and samples. At least steps_done + 1, at most
// max_steps.
int64_t steps_within_budget(const BudgetFigures& f, int64_t max_steps);

}  // namespace lmforge
