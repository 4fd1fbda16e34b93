// train/time_budget: the steps a run's measured speed fits in its minutes.
#include "train/time_budget.h"

#include <gtest/gtest.h>

namespace lmforge {
namespace {

TEST(TimeBudget, StepsAloneFillWhatIsLeft) {
    const BudgetFigures f{.budget_seconds = 600, .spent_seconds = 5, .steps_done = 10, .step_seconds = 0.5};
    EXPECT_EQ(steps_within_budget(f, 100000), 10 + 1190);  // (600 - 5) / 0.5
    EXPECT_EQ(steps_within_budget(f, 500), 500);           // never past train.max_steps
}

TEST(TimeBudget, EvaluationsAndSamplesTakeTheirShare) {
    const BudgetFigures f{.budget_seconds = 600,
                          .steps_done = 10,
                          .step_seconds = 0.5,
                          .eval_seconds = 10,  // every 100 steps: 0.1 s a step
                          .eval_every = 100,
                          .sample_seconds = 1,  // one every 100 steps, three at the end
                          .sample_every = 100,
                          .samples_at_end = 3};
    // (600 - 10 - 3) / (0.5 + 0.1 + 0.01) = 962.2...
    EXPECT_EQ(steps_within_budget(f, 100000), 10 + 962);
}

TEST(TimeBudget, MultipleChoiceEvaluationsTakeTheirShareToo) {
    const BudgetFigures f{.budget_seconds = 600,
                          .steps_done = 10,
                          .step_seconds = 0.5,
                          .eval_seconds = 10,  // every 100 steps: 0.1 s a step
                          .eval_every = 100,
                          .choice_seconds = 20,  // every 50 steps: 0.4 s a step, and one at the end
                          .choice_every = 50};
    // (600 - 10 - 20) / (0.5 + 0.1 + 0.4) = 570
    EXPECT_EQ(steps_within_budget(f, 100000), 10 + 570);
}

TEST(TimeBudget, ABudgetAlreadySpentEndsAtTheNextStep) {
    BudgetFigures f{.budget_seconds = 60, .spent_seconds = 90, .steps_done = 10, .step_seconds = 2};
    EXPECT_EQ(steps_within_budget(f, 1000), 11);
    f.step_seconds = 0;  // nothing measured: no division by zero
    EXPECT_EQ(steps_within_budget(f, 1000), 11);
    EXPECT_EQ(steps_within_budget(f, 10), 10);  // max_steps already reached
}

TEST(TimeBudget, AnEnormousBudgetStopsAtMaxSteps) {
    const BudgetFigures f{.budget_seconds = 1e300, .steps_done = 10, .step_seconds = 1e-300};
    EXPECT_EQ(steps_within_budget(f, 1000000), 1000000);
}

}  // namespace
}  // namespace lmforge
