// bench's profile accounts for the whole step: the model's kernel families and the optimizer's
// two passes (gradient norm, AdamW), which run outside the model, each a row. The rows are
// disjoint intervals of the timed steps, so their sum can never exceed the mean step.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "test_util.h"
#include "train/benchmark.h"

namespace lmforge {
namespace {

// A tiny model's steps: (B, T) = (2, 16).
BenchOptions tiny(int64_t layers, int64_t steps, int64_t warmup) {
    BenchOptions opts;
    opts.model = Gpt2Config{layers, 2, 32, 61, 16};  // T = 16 rows of positions
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

// LoRA in mixed precision: the base in bf16 alone (2 bytes a parameter), the fp32 weights, bf16
// copies, gradients and AdamW moments of the adapters alone (6 + 4 + 8 bytes a parameter).
TEST(Benchmark, LoraKeepsTheBaseInBf16AndStateForTheAdaptersAlone) {
    const LlamaConfig m = test::tiny_llama_config(true, 16);
    BenchOptions opts = tiny(2, 1, 0);
    opts.model = m;
    opts.lora_rank = 4;
    opts.precision = Precision::Bf16;
    const BenchResult r = run_benchmark(opts);
    const int64_t C = 64, KV = 32, I = 176, R = 4;
    const int64_t adapters = m.n_layer * R * ((C + C) + (C + KV) * 2 + (C + C) + (C + I) * 2 + (I + C));
    EXPECT_EQ(r.trainable, adapters);
    const auto bytes = [](double mib) { return mib * 1048576.0; };
    // Within the layouts' 64-byte alignment of each tensor.
    const double slack = 64.0 * 80;
    EXPECT_NEAR(bytes(r.memory.frozen_mib), 2.0 * static_cast<double>(r.params) + 4.0 * (2 * m.n_layer + 1) * C,
                2 * slack + 2.0 * 63 * C);  // the embedding's rows padded to 64, the norms' fp32 copy
    EXPECT_NEAR(bytes(r.memory.weights_mib), 6.0 * static_cast<double>(adapters), 6 * slack);
    EXPECT_NEAR(bytes(r.memory.gradients_mib), 4.0 * static_cast<double>(adapters), 4 * slack);
    EXPECT_NEAR(bytes(r.memory.moments_mib), 8.0 * static_cast<double>(adapters), 8 * slack);
}

TEST(Benchmark, NoProfileRowsUnlessAsked) {
    EXPECT_TRUE(run_benchmark(tiny(1, 1, 0)).profile.empty());
}

}  // namespace
}  // namespace lmforge
