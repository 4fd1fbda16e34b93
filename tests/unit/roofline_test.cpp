// The roofline's accounting (train/step_costs.h, train/roofline.h), checked against the model
// FLOPs the utilisation figure counts (flops_per_token) and against the families a profiled
// step really laps. Nothing here times anything or depends on the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "backend/gemm.h"
#include "kernels/attention.h"
#include "model/gpt2.h"
#include "model/llama.h"
#include "train/benchmark.h"
#include "train/roofline.h"
#include "train/step_costs.h"
#include "test_util.h"

namespace lmforge {
namespace {

constexpr int64_t kB = 2, kT = 16;

Gpt2Config tiny_gpt2() { return Gpt2Config{2, 2, 32, 61, kT}; }

LlamaConfig tiny_llama(bool tied) { return test::tiny_llama_config(tied, kT); }

LoraOptions lora(int64_t rank) {
    LoraOptions o;
    o.rank = rank;
    o.alpha = 2.0 * static_cast<double>(rank);
    o.targets.fill(true);
    return o;
}

// Parameters of a layout that are vectors (gains, biases): flops_per_token counts them among
// the matmul parameters (6 FLOPs a token, 4 frozen), though no product multiplies them.
double vector_params(const ParamLayout& layout) {
    double n = 0;
    for (const ParamSpec& s : layout.specs()) n += s.shape.size() == 1 ? static_cast<double>(s.numel) : 0.0;
    return n;
}

FamilyCost family(const std::vector<FamilyCost>& costs, const std::string& name) {
    const auto it = std::find_if(costs.begin(), costs.end(), [&](const FamilyCost& c) { return c.family == name; });
    EXPECT_NE(it, costs.end()) << name;
    return it != costs.end() ? *it : FamilyCost{};
}

// flops_per_token · tokens = the weight products + attention's 12·L·C·T a token (the whole
// T×T, as it counts) + 6 (trainable) or 4 (frozen) FLOPs a token per vector parameter.
// skipped: FLOPs a token of products that flops_per_token counts and the step does not take.
void expect_matmuls_sum_to_flops_per_token(CausalLm& model, double layers, const ParamLayout* frozen,
                                           double skipped = 0) {
    model.plan(kB, kT);
    const double tokens = kB * kT, C = static_cast<double>(model.width());
    const std::vector<FamilyCost> costs = step_costs(model, Recompute::None, MomentPrecision::F32);
    const double vectors = 6 * vector_params(model.layout()) + (frozen != nullptr ? 4 * vector_params(*frozen) : 0);
    const double expected = (flops_per_token(model, kT) - 12 * layers * C * kT - vectors - skipped) * tokens;
    EXPECT_NEAR(weight_matmul_flops(costs), expected, 1e-9 * expected);
}

TEST(Roofline, Gpt2MatmulFlopsAreFlopsPerToken) {
    const auto gemm = backend::make_gemm(backend::GemmKind::Naive);
    Gpt2 model(tiny_gpt2(), *gemm);
    expect_matmuls_sum_to_flops_per_token(model, 2, nullptr);
}

TEST(Roofline, LlamaMatmulFlopsAreFlopsPerToken) {
    const auto gemm = backend::make_gemm(backend::GemmKind::Naive);
    for (const bool tied : {false, true}) {
        SCOPED_TRACE(tied ? "tied" : "untied");
        Llama model(tiny_llama(tied), *gemm);
        expect_matmuls_sum_to_flops_per_token(model, 2, nullptr);
    }
}

TEST(Roofline, LoraMatmulFlopsAreFlopsPerToken) {
    // The adapters' six FLOPs a parameter and the frozen base's four (no weight gradient), less
    // the first block's input gradient, which nothing reads (the embedding is frozen): two of
    // each of its q, k and v weights and of their adapters' A.
    const auto gemm = backend::make_gemm(backend::GemmKind::Naive);
    for (const bool tied : {false, true}) {
        SCOPED_TRACE(tied ? "tied" : "untied");
        const LlamaConfig cfg = tiny_llama(tied);
        const LoraOptions options = lora(4);
        Llama model(cfg, *gemm, Precision::Fp32, Recompute::None, options);
        const auto C = static_cast<double>(cfg.n_embd), W = static_cast<double>(cfg.qkv_width());
        const double skipped = 2 * C * W + 2 * 3 * static_cast<double>(options.rank) * C;
        expect_matmuls_sum_to_flops_per_token(model, 2, &model.frozen_layout(), skipped);
    }
}

TEST(Roofline, BlockRecomputeRunsAllButTheLastBlocksForwardGemmsTwice) {
    // Under train.recompute = block each block but the last reruns its forward before its
    // backward, under the forward's laps, all but the MLP's projection (whose output backward
    // does not read): 8 of the 12·C² products a row of a block's forward.
    const auto gemm = backend::make_gemm(backend::GemmKind::Naive);
    const Gpt2Config cfg = tiny_gpt2();
    const double L = static_cast<double>(cfg.n_layer);
    for (const Recompute r : {Recompute::None, Recompute::Gelu, Recompute::Block}) {
        Gpt2 model(cfg, *gemm, Precision::Fp32, r);
        model.plan(kB, kT);
        const double base = family(step_costs(model, Recompute::None, MomentPrecision::F32), "matmul_fwd").flops;
        const std::vector<FamilyCost> costs = step_costs(model, r, MomentPrecision::F32);
        const double again = r == Recompute::Block ? (L - 1) / L * 8.0 / 12.0 : 0.0;
        EXPECT_DOUBLE_EQ(family(costs, "matmul_fwd").flops, base * (1 + again));
        const bool recomputes = r != Recompute::None;
        const bool has_row = std::any_of(costs.begin(), costs.end(), [](const FamilyCost& c) { return c.family == "recompute"; });
        EXPECT_EQ(has_row, recomputes);
    }
}

TEST(Roofline, AdamWMovesEachParametersStateOnce) {
    // Reads the gradient, updates the parameter and both moments in place, and writes the bf16
    // copy in mixed precision: 4 + 8 + 16 bytes a parameter, 4 + 8 + 8 + 2 with bf16 moments.
    const auto gemm = backend::make_gemm(backend::GemmKind::Naive);
    for (const Precision p : {Precision::Fp32, Precision::Bf16}) {
        Gpt2 model(tiny_gpt2(), *gemm, p);
        model.plan(kB, kT);
        double n = 0;
        for (const ParamSpec& s : model.layout().specs()) n += static_cast<double>(s.reserved);
        const bool half = p == Precision::Bf16;
        const MomentPrecision moments = half ? MomentPrecision::BF16 : MomentPrecision::F32;
        const std::vector<FamilyCost> costs = step_costs(model, Recompute::None, moments);
        EXPECT_DOUBLE_EQ(family(costs, "adamw").bytes, n * (half ? 22.0 : 28.0));
        EXPECT_DOUBLE_EQ(family(costs, "grad_norm").bytes, 4.0 * static_cast<double>(model.grads().size()));
        EXPECT_EQ(family(costs, "matmul_fwd").bf16_math, half);
        // bf16 dot products where the kernel has them, fp32 tiles elsewhere.
        EXPECT_EQ(family(costs, "attention_fwd").bf16_math, half && kernels::attention_has_bf16_math());
        EXPECT_EQ(family(costs, "attention_bwd").bf16_math, half && kernels::attention_has_bf16_math());
    }
}

// The families a profiled bench step laps that have no cost.
std::set<std::string> unmodelled(const BenchOptions& opts) {
    const BenchResult r = run_benchmark(opts);
    std::set<std::string> missing;
    for (const auto& [name, ms] : r.profile) {
        const bool known =
            std::any_of(r.costs.begin(), r.costs.end(), [&](const FamilyCost& c) { return c.family == name; });
        if (!known) missing.insert(name);
    }
    return missing;
}

TEST(Roofline, EveryFamilyABenchStepLapsIsModelled) {
    BenchOptions opts;
    opts.batch = kB;
    opts.seq = kT;
    opts.steps = 1;
    opts.warmup = 1;
    opts.peak_gflops = 1.0;
    opts.profile = true;
    for (const Recompute r : {Recompute::None, Recompute::Gelu, Recompute::Block}) {
        opts.recompute = r;
        opts.model = tiny_gpt2();
        opts.lora_rank = 0;
        EXPECT_EQ(unmodelled(opts), std::set<std::string>{}) << recompute_name(r);
        opts.model = tiny_llama(false);
        EXPECT_EQ(unmodelled(opts), std::set<std::string>{}) << recompute_name(r);
        opts.lora_rank = 4;
        EXPECT_EQ(unmodelled(opts), std::set<std::string>{}) << recompute_name(r) << ", LoRA";
    }
}

TEST(Roofline, BoundIsTheLargerLimitOverTheTimeReached) {
    const std::vector<FamilyCost> costs = {{"matmul_fwd", 2e9, 1e8, {1e8}, true},
                                           {"gelu_fwd", 1e8, 4e8, {2e8, 2e8}, false}};
    const MachineLimits limits{.bf16_gflops = 100, .fp32_gflops = 50, .memory = {{"memory", 0, 10}}};
    const std::vector<RooflineRow> rows = roofline({{"matmul_fwd", 40}, {"gelu_fwd", 80}, {"other", 3}}, costs, limits);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_DOUBLE_EQ(rows[0].compute_ms, 20);  // 2 GFLOP at the bf16 peak
    EXPECT_DOUBLE_EQ(rows[0].bandwidth_ms, 10);
    EXPECT_DOUBLE_EQ(rows[0].fraction(), 0.5);
    EXPECT_DOUBLE_EQ(rows[1].compute_ms, 2);  // at the fp32 peak
    EXPECT_DOUBLE_EQ(rows[1].bound_ms(), 40);
    EXPECT_DOUBLE_EQ(rows[1].fraction(), 0.5);
    EXPECT_FALSE(rows[2].cost.has_value());
    EXPECT_DOUBLE_EQ(rows[2].fraction(), 0);
}

TEST(Roofline, EachPassTakesWhatACacheHoldsFromIt) {
    // Two passes of 300 MB, a cache of 100 MB at 100 GB/s before memory at 10 GB/s: each pass
    // 1 ms from the cache and 20 from memory; the sum of the passes as one would be 51 ms.
    const std::vector<FamilyCost> costs = {{"adamw", 0, 6e8, {3e8, 3e8}, false}};
    const MachineLimits limits{.bf16_gflops = 1, .fp32_gflops = 1, .memory = {{"L3", 100'000'000, 100}, {"memory", 0, 10}}};
    EXPECT_DOUBLE_EQ(roofline({{"adamw", 50}}, costs, limits)[0].bandwidth_ms, 42);
}

}  // namespace
}  // namespace lmforge
