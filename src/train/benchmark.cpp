#include "train/benchmark.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "backend/threads.h"
#include "core/profiler.h"
#include "core/rng.h"
#include "core/sysinfo.h"
#include "core/timer.h"
#include "distributed/comm_single.h"
#include "distributed/data_parallel.h"
#include "model/gpt2.h"
#include "model/llama.h"
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
    // Lookups, not products: GPT-2's positions, and the token embedding where a separate matrix
    // is the LM head.
    const auto matmul_params = [](const ParamLayout& layout) {
        const bool untied_head = layout.specs().back().name == "lm_head.weight";
        double n = 0;
        for (const ParamSpec& s : layout.specs()) {
            if (s.name == "wpe.weight" || (untied_head && s.name == "model.embed_tokens.weight")) continue;
            n += static_cast<double>(s.numel);
        }
        return n;
    };
    // A frozen weight's backward is d(input) alone: 4 FLOPs per parameter, not 6.
    const auto* llama = dynamic_cast<const Llama*>(&model);
    const double frozen = llama != nullptr && llama->adapters_only() ? matmul_params(llama->frozen_layout()) : 0;
    return 6.0 * matmul_params(model.layout()) + 4.0 * frozen +
           12.0 * j["n_layer"].get<double>() * static_cast<double>(model.width()) * T;
}

namespace {

// The model of the options with random weights (and LoRA's random frozen base), planned.
std::unique_ptr<CausalLm> bench_model(const BenchOptions& opts, backend::Gemm& gemm) {
    std::unique_ptr<CausalLm> model;
    if (const auto* gpt2 = std::get_if<Gpt2Config>(&opts.model)) {
        model = std::make_unique<Gpt2>(*gpt2, gemm, opts.precision, opts.recompute);
    } else {
        LoraOptions lora;
        lora.rank = opts.lora_rank;
        lora.alpha = 2.0 * static_cast<double>(opts.lora_rank);
        lora.targets.fill(true);
        auto llama = std::make_unique<Llama>(std::get<LlamaConfig>(opts.model), gemm, opts.precision, opts.recompute,
                                             lora);
        if (lora.enabled()) llama->init_base(1);
        model = std::move(llama);
    }
    if (opts.bf16_grads) model->keep_grads_in_bf16();
    model->init_weights(0);
    model->plan(opts.batch, opts.seq);
    return model;
}

// The activations every recompute mode saves against keeping all, for the model's family.
double activations_mib(const BenchOptions& opts, Recompute r) {
    if (const auto* gpt2 = std::get_if<Gpt2Config>(&opts.model)) {
        return static_cast<double>(gpt2_acts_bytes(*gpt2, opts.batch, opts.seq, opts.precision, r)) / 1048576.0;
    }
    LoraOptions lora;
    lora.rank = opts.lora_rank;
    lora.targets.fill(true);
    return static_cast<double>(
               llama_acts_bytes(std::get<LlamaConfig>(opts.model), opts.batch, opts.seq, opts.precision, r, lora)) /
           1048576.0;
}

}  // namespace

BenchResult run_benchmark(const BenchOptions& opts) {
    auto gemm = backend::make_gemm(opts.gemm);
    const std::unique_ptr<CausalLm> owned = bench_model(opts, *gemm);
    CausalLm& model = *owned;
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
            batch.inputs[j] = static_cast<int32_t>(data_rng.below(model.vocab_size()));
            batch.targets[j] = static_cast<int32_t>(data_rng.below(model.vocab_size()));
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
    r.trainable = model.layout().count();
    r.params = model.adapters_only() ? static_cast<const Llama&>(model).frozen_layout().count() : r.trainable;
    r.step_ms_median = median * 1e3;
    r.step_ms_min = times.front() * 1e3;
    r.step_ms_mean = mean_of(times) * 1e3;
    r.step_ms_max = times.back() * 1e3;
    r.tokens_per_s = static_cast<double>(opts.batch * opts.seq) / median;
    r.model_gflops = flops_per_token(model, opts.seq) * r.tokens_per_s / 1e9;
    r.utilisation = r.model_gflops / opts.peak_gflops;
    r.max_rss_mb = peak_rss_mb();
    r.activation_mb = static_cast<double>(model.activation_bytes()) / 1048576.0;
    r.activation_saved_mb = activations_mib(opts, Recompute::None) - activations_mib(opts, opts.recompute);
    r.memory = memory_parts(model, dp);
    if (opts.profile) r.costs = step_costs(model, opts.recompute, opts.moments);
    return r;
}

}  // namespace lmforge
