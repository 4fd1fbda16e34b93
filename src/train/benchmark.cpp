#include "train/benchmark.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "backend/threads.h"
#include "core/profiler.h"
#include "core/rng.h"
#include "core/sysinfo.h"
#include "core/timer.h"
#include <nlohmann/json.hpp>
#include "distributed/comm_single.h"
#include "distributed/data_parallel.h"
#include "model/gpt2.h"
#include "train/train_step.h"

namespace lmforge {

namespace {

double median_of(std::vector<double> x) {
    std::sort(x.begin(), x.end());
    const size_t n = x.size();
    return n % 2 == 1 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double mean_of(const std::vector<double>& x) {
    return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

}  // namespace

double flops_per_token(const Model& model, int64_t T) {
    const auto j = nlohmann::json::parse(model.config_json());
    const bool untied_head = model.layout().specs().back().name == "lm_head.weight";
    double matmul_params = 0;
    for (const ParamSpec& s : model.layout().specs()) {
        // Lookups, not products: GPT-2's positions, and the token embedding where a separate
        // matrix is the LM head.
        if (s.name == "wpe.weight" || (untied_head && s.name == "model.embed_tokens.weight")) continue;
        matmul_params += static_cast<double>(s.numel);
    }
    return 6.0 * matmul_params + 12.0 * j["n_layer"].get<double>() * static_cast<double>(model.width()) * T;
}

BenchResult run_benchmark(const BenchOptions& opts) {
    auto gemm = backend::make_gemm(opts.gemm);
    Gpt2 model(opts.model, *gemm, opts.precision, opts.recompute);
    model.init_weights(0);
    model.plan(opts.batch, opts.seq);
    SingleCommunicator comm;
    DataParallel dp(comm, model, AdamWConfig{.moments = opts.moments}, ParallelOptions{});

    Batch batch;
    batch.resize_for_tokens(opts.batch, opts.seq);
    Rng data_rng(1);
    Profiler profiler;
    std::vector<double> times, compute, optimizer;
    BenchResult r;
    for (int64_t i = 0; i < opts.warmup + opts.steps; i++) {
        for (size_t j = 0; j < batch.inputs.size(); j++) {
            batch.inputs[j] = static_cast<int32_t>(data_rng.below(opts.model.vocab_size));
            batch.targets[j] = static_cast<int32_t>(data_rng.below(opts.model.vocab_size));
        }
        if (opts.profile && i == opts.warmup) {
            profiler.reset();
            model.set_profiler(&profiler);
            dp.set_profiler(&profiler);
        }
        Timer timer;
        const StepResult step = train_step(model, dp, std::span<const Batch>(&batch, 1), 3e-4f, 1.0);
        const double seconds = timer.seconds();
        if (i == 0) r.loss_first = step.loss.mean();
        r.loss_last = step.loss.mean();
        if (i >= opts.warmup) {
            times.push_back(seconds);
            compute.push_back(step.compute_seconds);
            optimizer.push_back(step.optimizer_seconds);
        }
    }

    const double median = median_of(times);
    r.forward_backward_ms = median_of(compute) * 1e3;
    r.optimizer_ms = median_of(optimizer) * 1e3;
    std::sort(times.begin(), times.end());
    for (const auto& [name, seconds] : profiler.totals()) {
        r.profile.emplace_back(name, seconds * 1e3 / static_cast<double>(opts.steps));
    }
    std::sort(r.profile.begin(), r.profile.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    r.threads = backend::max_threads();
    r.params = model.layout().count();
    r.step_ms_median = median * 1e3;
    r.step_ms_min = times.front() * 1e3;
    r.step_ms_mean = mean_of(times) * 1e3;
    r.step_ms_max = times.back() * 1e3;
    r.tokens_per_s = static_cast<double>(opts.batch * opts.seq) / median;
    r.model_gflops = flops_per_token(model, opts.seq) * r.tokens_per_s / 1e9;
    r.utilisation = r.model_gflops / opts.peak_gflops;
    r.max_rss_mb = peak_rss_mb();
    r.activation_mb = static_cast<double>(model.activation_bytes()) / 1048576.0;
    const auto body_bytes = [&](Recompute r) {
        return static_cast<double>(gpt2_acts_bytes(opts.model, opts.batch, opts.seq, opts.precision, r));
    };
    r.activation_saved_mb = (body_bytes(Recompute::None) - body_bytes(opts.recompute)) / 1048576.0;
    return r;
}

}  // namespace lmforge
