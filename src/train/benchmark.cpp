#include "train/benchmark.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "backend/threads.h"
#include "core/profiler.h"
#include "core/rng.h"
#include "core/sysinfo.h"
#include "core/timer.h"
#include "model/gpt2.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"

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

double flops_per_token(const Gpt2Config& cfg, int64_t params, int64_t T) {
    const double matmul_params = static_cast<double>(params - cfg.block_size * cfg.n_embd);
    return 6.0 * matmul_params + 12.0 * cfg.n_layer * cfg.n_embd * T;
}

BenchResult run_benchmark(const BenchOptions& opts) {
    auto gemm = backend::make_gemm(opts.gemm);
    Gpt2 model(opts.model, *gemm, opts.precision, opts.recompute);
    model.init_weights(0);
    model.plan(opts.batch, opts.seq);
    AdamW optimizer(model.layout(), AdamWConfig{.moments = opts.moments});

    const int64_t N = opts.batch * opts.seq;
    std::vector<int32_t> inputs(N), targets(N);
    Rng data_rng(1);
    Profiler profiler;
    std::vector<double> times;
    std::vector<double> phases[5];  // zero, forward, backward, grad norm, optimizer
    BenchResult r;
    for (int64_t i = 0; i < opts.warmup + opts.steps; i++) {
        for (int64_t j = 0; j < N; j++) {
            inputs[j] = static_cast<int32_t>(data_rng.below(opts.model.vocab_size));
            targets[j] = static_cast<int32_t>(data_rng.below(opts.model.vocab_size));
        }
        if (opts.profile && i == opts.warmup) {
            profiler.reset();
            model.set_profiler(&profiler);
        }
        Timer timer, phase;
        double split[5];
        const auto lap = [&](int k) {
            split[k] = phase.seconds();
            phase.reset();
        };
        model.zero_grad();
        model.expect_backward(1.0f);
        lap(0);
        const float loss = model.forward(inputs.data(), targets.data());
        lap(1);
        model.backward(1.0f);
        lap(2);
        const double norm =
            grad_norm(model.grads().data(), static_cast<int64_t>(model.grads().size()));
        lap(3);
        optimizer.step(model.params().data(), model.grads().data(), 3e-4f, clip_factor(norm, 1.0),
                       model.half_weights());
        lap(4);
        const double seconds = timer.seconds();
        if (i == 0) r.loss_first = loss;
        r.loss_last = loss;
        if (i >= opts.warmup) {
            times.push_back(seconds);
            for (int k = 0; k < 5; k++) phases[k].push_back(split[k]);
        }
    }

    const double median = median_of(times);
    r.zero_ms = median_of(phases[0]) * 1e3;
    r.forward_ms = median_of(phases[1]) * 1e3;
    r.backward_ms = median_of(phases[2]) * 1e3;
    r.clip_ms = median_of(phases[3]) * 1e3;
    r.optimizer_ms = median_of(phases[4]) * 1e3;
    std::sort(times.begin(), times.end());
    for (const auto& [name, seconds] : profiler.totals()) {
        r.profile.emplace_back(name, seconds * 1e3 / static_cast<double>(opts.steps));
    }
    if (opts.profile) {  // the optimizer's two passes run outside the model: rows of their own
        r.profile.emplace_back("grad_norm", mean_of(phases[3]) * 1e3);
        r.profile.emplace_back("adamw", mean_of(phases[4]) * 1e3);
    }
    std::sort(r.profile.begin(), r.profile.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    r.threads = backend::max_threads();
    r.params = model.layout().count();
    r.step_ms_median = median * 1e3;
    r.step_ms_min = times.front() * 1e3;
    r.step_ms_mean = mean_of(times) * 1e3;
    r.step_ms_max = times.back() * 1e3;
    r.tokens_per_s = static_cast<double>(N) / median;
    r.model_gflops = flops_per_token(opts.model, r.params, opts.seq) * r.tokens_per_s / 1e9;
    r.utilisation = r.model_gflops / opts.peak_gflops;
    r.max_rss_mb = peak_rss_mb();
    r.activation_mb = static_cast<double>(model.activation_bytes()) / 1048576.0;
    r.activation_saved_mb =
        static_cast<double>(gpt2_acts_bytes(opts.model, opts.batch, opts.seq, opts.precision, Recompute::None,
                                            model.head_one_pass())) /
            1048576.0 -
        r.activation_mb;
    return r;
}

}  // namespace lmforge
