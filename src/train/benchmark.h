// Times full training steps on random tokens, through the trainer's own train_step (forward
// and backward, gradient norm, clipping, AdamW): the engine's speed, comparable field by field
// with the PyTorch reference (bench/ and ../shared/bench/torch_gpt2.py).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "backend/gemm.h"
#include "model/gpt2_config.h"
#include "model/gpt2_acts.h"
#include "model/llama_config.h"
#include "model/model.h"
#include "model/precision.h"
#include "optim/moments.h"
#include "train/memory_report.h"
#include "train/step_costs.h"

namespace lmforge {

struct BenchOptions {
    std::variant<Gpt2Config, LlamaConfig> model;
    std::string model_name = "gpt2";
    int64_t lora_rank = 0;  // Llama: adapters of this rank on every projection of a random frozen base
    int64_t batch = 4;
    int64_t seq = 64;
    int64_t steps = 10;
    int64_t warmup = 3;  // untimed steps first: oneDNN builds its kernels, pages fault in
    double peak_gflops = 0;  // for the utilisation figure: peak_gflops(precision)
    backend::GemmKind gemm = backend::GemmKind::Onednn;
    bool profile = false;  // time each kernel family
    Precision precision = Precision::Fp32;
    Recompute recompute = Recompute::None;
    MomentPrecision moments = MomentPrecision::F32;
    bool bf16_grads = false;  // gradients kept in bf16 (GPT-2, mixed precision)
};

struct BenchResult {
    int threads = 0;
    int64_t params = 0;  // without vocabulary padding
    double step_ms_median = 0, step_ms_min = 0, step_ms_max = 0;
    double step_ms_mean = 0;  // what the profile's per-step means are shares of
    double tokens_per_s = 0;
    double model_gflops = 0;  // model FLOPs per second (see flops_per_token)
    double utilisation = 0;   // model_gflops / peak_gflops
    double loss_first = 0, loss_last = 0;
    double max_rss_mb = 0;
    double activation_mb = 0;
    double activation_saved_mb = 0;  // by recompute, against keeping every activation
    int64_t trainable = 0;           // parameters AdamW updates (LoRA: the adapters)
    MemoryParts memory;              // by part, as the training log states it
    // Median ms per phase of a step: forward and backward, then norm, clipping and AdamW.
    double forward_backward_ms = 0, optimizer_ms = 0;
    // With opts.profile: (kernel family, mean ms per timed step), slowest first; the gradient
    // norm and AdamW are rows too, so the rows add up to the whole step.
    std::vector<std::pair<std::string, double>> profile;
    // With opts.profile: the FLOPs and bytes of each family per step (train/step_costs.h), for
    // the roofline.
    std::vector<FamilyCost> costs;
};

// FLOPs of one training step per token of a causal model: 6 per matmul parameter (forward 2,
// backward 4; GPT-2's position table and an untied token embedding are lookups, not matmuls;
// 4 per frozen one, LoRA's base, whose weight gradient is not taken)
// plus causal attention's QKᵀ and AV counted over the full T×T, 12·L·C·T — the same count as
// the PyTorch reference.
double flops_per_token(const Model& model, int64_t T);

BenchResult run_benchmark(const BenchOptions& opts);

}  // namespace lmforge
