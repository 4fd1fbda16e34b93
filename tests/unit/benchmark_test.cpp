// bench's profile accounts for the whole step: the model's kernel families and the optimizer's
// two passes (gradient norm, AdamW), which run outside the model, each a row. The rows are
// disjoint intervals of the timed steps, so their sum can never exceed the mean step.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "train/benchmark.h"

namespace lmforge {
namespace {

// A tiny model's steps: (B, T) = (2, 16).
BenchOptions tiny(int64_t layers, int64_t steps, int64_t warmup) {
    BenchOptions opts;
    opts.model = Gpt2Config{layers, 2, 32, 61, 16};
    opts.batch = 2;
    opts.seq = 16;
    opts.steps = steps;
    opts.warmup = warmup;
    opts.peak_gflops = 1.0;
    return opts;
}

TEST(Benchmark, ProfileRowsCoverTheOptimizerAndFitInTheStep) {
    BenchOptions opts = tiny(2, 3, 1);
    opts.profile = true;
    const BenchResult r = run_benchmark(opts);

    double sum = 0;
    for (const auto& [name, ms] : r.profile) {
        EXPECT_GE(ms, 0.0) << name;
        sum += ms;
    }
    const auto has = [&](const std::string& name) {
        return std::any_of(r.profile.begin(), r.profile.end(), [&](const auto& row) { return row.first == name; });
    };
    EXPECT_TRUE(has("grad_norm"));
    EXPECT_TRUE(has("adamw"));
    EXPECT_TRUE(has("matmul_fwd"));
    EXPECT_TRUE(std::is_sorted(r.profile.begin(), r.profile.end(),
                               [](const auto& a, const auto& b) { return a.second > b.second; }));
    EXPECT_LE(sum, r.step_ms_mean * (1 + 1e-9));
}

TEST(Benchmark, NoProfileRowsUnlessAsked) {
    EXPECT_TRUE(run_benchmark(tiny(1, 1, 0)).profile.empty());
}

}  // namespace
}  // namespace lmforge
