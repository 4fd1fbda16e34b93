// lmforge bench: time full training steps of a GPT-2 shape on random tokens.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "backend/bandwidth.h"
#include "backend/best_figures.h"
#include "backend/threads.h"
#include "backend/isa.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/error.h"
#include "core/sysinfo.h"
#include "model/precision.h"
#include "train/benchmark.h"
#include "train/roofline.h"

namespace lmforge::cli {

namespace {

// 124439808 -> "124,439,808".
std::string with_thousands(int64_t n) {
    std::string digits = std::to_string(n), out;
    for (size_t i = 0; i < digits.size(); i++) {
        if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
        out += digits[i];
    }
    return out;
}

struct BenchFlags {
    std::string model = "gpt2";
    std::optional<int64_t> layers, heads, embd, vocab, kv_heads, intermediate;
    int64_t lora = 0;
    int64_t batch = 4, seq = 64, steps = 10, warmup = 3;
    std::optional<int> threads;
    std::optional<double> peak_gflops;  // default: by precision
    std::string gemm = "onednn";
    std::string precision = "auto";
    std::string recompute = "none";
    std::string moments = "fp32";
    std::string grads = "fp32";
    bool json = false;
    bool profile = false;
};

// What the roofline's limits divide by: the run's peak for its GEMMs in mixed precision, the
// fp32 one for the rest (attention's tiles, the elementwise kernels), and the memory levels.
MachineLimits machine_limits(const BenchOptions& opts, std::vector<backend::MemoryLevel> memory) {
    const bool half = opts.precision == Precision::Bf16;
    return {.bf16_gflops = opts.peak_gflops,
            .fp32_gflops = half ? peak_gflops(Precision::Fp32) : opts.peak_gflops,
            .memory = std::move(memory)};
}

// The profile's roofline, measuring the memory levels. A family past its bandwidth limit means
// they were measured in a slow minute of a shared host: once more, keeping the higher figures
// (as train does for the peak); a family still above stays above, a count to look into.
MachineLimits roofline_limits(const BenchResult& r, const BenchOptions& opts) {
    MachineLimits limits = machine_limits(opts, backend::measured_memory_levels());
    const std::vector<RooflineRow> rows = roofline(r.profile, r.costs, limits);
    const bool above = std::any_of(rows.begin(), rows.end(), [](const RooflineRow& row) {
        return row.bandwidth_ms > row.compute_ms && row.fraction() > 1;
    });
    if (above) limits.memory = backend::remeasured_memory_levels();
    return limits;
}

// "12.3" or "-" where there is no figure.
std::string figure(bool known, double x, int decimals) {
    return known ? fmt::format("{:.{}f}", x, decimals) : "-";
}

// "1041 GFLOP/s (bf16 GEMMs) and 516 (fp32); 287 GB/s from L2 (2 MiB), ..., 61.5 from memory"
std::string describe_limits(const MachineLimits& limits, Precision precision) {
    std::string s = precision == Precision::Bf16 ? fmt::format("{:.0f} GFLOP/s (bf16 GEMMs) and {:.0f} (fp32)",
                                                               limits.bf16_gflops, limits.fp32_gflops)
                                                 : fmt::format("{:.0f} GFLOP/s", limits.fp32_gflops);
    for (size_t i = 0; i < limits.memory.size(); i++) {
        const backend::MemoryLevel& m = limits.memory[i];
        s += fmt::format("{} {:.1f}{} from {}", i == 0 ? ";" : ",", m.gbs, i == 0 ? " GB/s" : "", m.name);
        if (m.bytes > 0) s += fmt::format(" ({} MiB)", m.bytes >> 20);
    }
    return s;
}

void print_roofline(const std::vector<RooflineRow>& rows, const MachineLimits& limits, Precision precision) {
    fmt::print("roofline   ms per step against the limits, {}:\n", describe_limits(limits, precision));
    size_t width = 6;
    for (const RooflineRow& r : rows) width = std::max(width, r.family.size());
    fmt::print("  {:<{}} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "family", width, "GFLOP", "MB", "compute",
               "memory", "bound", "reached", "of bound");
    for (const RooflineRow& r : rows) {
        const bool known = r.cost.has_value(), bounded = known && r.bound_ms() > 0;
        fmt::print("  {:<{}} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9.1f} {:>9}\n", r.family, width,
                   figure(known, known ? r.cost->flops / 1e9 : 0, 2), figure(known, known ? r.cost->bytes / 1e6 : 0, 1),
                   figure(known, r.compute_ms, 1), figure(known, r.bandwidth_ms, 1), figure(known, r.bound_ms(), 1),
                   r.reached_ms, bounded ? fmt::format("{:.1f}%", 100.0 * r.fraction()) : "-");
    }
}

// The shape --model names with the flags over it, and (L, NH, NKV, C, V) for the report.
struct Shape {
    int64_t layers, heads, kv_heads, embd, vocab;
};

Shape set_model(BenchOptions& opts, const BenchFlags& f) {
    if (LlamaConfig::is_preset(f.model)) {
        LlamaConfig m = LlamaConfig::preset(f.model);
        if (f.layers) m.n_layer = *f.layers;
        if (f.heads) m.n_head = *f.heads;
        if (f.kv_heads) m.n_kv_head = *f.kv_heads;
        if (f.embd) m.n_embd = *f.embd;
        if (f.intermediate) m.intermediate = *f.intermediate;
        if (f.vocab) m.vocab_size = *f.vocab;
        m.block_size = std::max(m.block_size, f.seq);
        m.validate();
        opts.model = m;
        opts.lora_rank = f.lora;
        return {m.n_layer, m.n_head, m.n_kv_head, m.n_embd, m.vocab_size};
    }
    if (f.lora > 0) throw InputError(fmt::format("--lora: {} is a GPT-2 preset; LoRA adapts Llama models", f.model));
    Gpt2Config m = Gpt2Config::preset(f.model);
    if (f.layers) m.n_layer = *f.layers;
    if (f.heads) m.n_head = *f.heads;
    if (f.embd) m.n_embd = *f.embd;
    if (f.vocab) m.vocab_size = *f.vocab;
    // A position table of T rows, as the PyTorch reference (../shared/bench/torch_gpt2.py)
    // builds: the same parameters to update.
    m.block_size = f.seq;
    m.validate();
    opts.model = m;
    return {m.n_layer, m.n_head, m.n_head, m.n_embd, m.vocab_size};
}

// What the flags ask for, with the model's shape and how the precision was chosen.
struct BenchPlan {
    BenchOptions opts;
    Shape shape{};
    std::string why;
};

// Also sets the threads, and measures the peak on them unless --peak-gflops gives it.
BenchPlan plan_bench(const BenchFlags& f) {
    BenchPlan b;
    BenchOptions& opts = b.opts;
    opts.model_name = f.model;
    b.shape = set_model(opts, f);
    opts.batch = f.batch;
    opts.seq = f.seq;
    opts.steps = f.steps;
    opts.warmup = f.warmup;
    opts.gemm = backend::parse_gemm_kind(f.gemm);
    opts.precision = resolve_precision(f.precision, b.why);
    opts.recompute = parse_recompute(f.recompute);
    opts.moments = parse_moment_precision(f.moments, "--moments");
    opts.bf16_grads = f.grads == "bf16";
    opts.profile = f.profile;
    backend::set_threads(f.threads.value_or(backend::hardware_threads()), "--threads");
    opts.peak_gflops = f.peak_gflops.value_or(peak_gflops(opts.precision));  // on those threads
    return b;
}

const char* peak_name(const BenchFlags& f, Precision precision) {
    return f.peak_gflops ? "--peak-gflops" : peak_unit(precision);
}

// One JSON line, with the fields of the PyTorch references (../shared/bench/torch_gpt2.py).
void print_json(const BenchFlags& f, const BenchPlan& b, const BenchResult& r, double bandwidth) {
    const BenchOptions& opts = b.opts;
    const Shape& m = b.shape;
    const nlohmann::json j = {
        {"impl", "lmforge"}, {"precision", precision_name(opts.precision)}, {"gemm", f.gemm},
        {"threads", r.threads}, {"model", f.model}, {"layers", m.layers},
        {"heads", m.heads}, {"kv_heads", m.kv_heads}, {"embd", m.embd}, {"vocab", m.vocab},
        {"batch", opts.batch}, {"seq", opts.seq}, {"params", r.params},
        {"mode", opts.lora_rank > 0 ? "lora" : "full"}, {"lora_rank", opts.lora_rank},
        {"trainable_params", r.trainable}, {"frozen_mb", r.memory.frozen_mib},
        {"weights_mb", r.memory.weights_mib}, {"gradients_mb", r.memory.gradients_mib},
        {"moments_mb", r.memory.moments_mib}, {"planned_mb", r.memory.total_mib()},
        {"step_ms_median", r.step_ms_median}, {"step_ms_min", r.step_ms_min},
        {"step_ms_max", r.step_ms_max}, {"tokens_per_s", r.tokens_per_s},
        {"model_gflops", r.model_gflops}, {"peak_gflops", opts.peak_gflops},
        {"peak_unit", peak_name(f, opts.precision)}, {"peak_bandwidth_gbs", bandwidth},
        {"util_peak", r.utilisation}, {"loss_first", r.loss_first},
        {"loss_last", r.loss_last}, {"max_rss_mb", r.max_rss_mb},
        {"activation_mb", r.activation_mb}, {"recompute", recompute_name(opts.recompute)},
        {"moments", moment_precision_name(opts.moments)}, {"grads", f.grads},
        {"activation_saved_mb", r.activation_saved_mb}, {"forward_backward_ms", r.forward_backward_ms},
        {"optimizer_ms", r.optimizer_ms}, {"kernels", backend::isa_name(backend::active_isa())}};
    fmt::print("{}\n", j.dump());
}

// Each kernel family's share of the step, then the roofline (--profile).
void print_profile(const BenchResult& r, const MachineLimits& limits, Precision precision) {
    fmt::print("profile    ms per step (mean of the timed steps, {:.1f} ms), by kernel family:\n", r.step_ms_mean);
    size_t width = 0;
    for (const auto& row : r.profile) width = std::max(width, row.first.size());
    for (const auto& [name, ms] : r.profile) {
        fmt::print("  {:<{}} {:8.1f}  {:5.1f}%\n", name, width, ms, 100.0 * ms / r.step_ms_mean);
    }
    print_roofline(roofline(r.profile, r.costs, limits), limits, precision);
}

void print_report(const BenchFlags& f, const BenchPlan& b, const BenchResult& r, double bandwidth,
                  const MachineLimits& limits) {
    const BenchOptions& opts = b.opts;
    const Shape& m = b.shape;
    fmt::print("model      {} (L={} NH={} NKV={} C={} V={}), {} parameters{}\n", f.model, m.layers, m.heads,
               m.kv_heads, m.embd, m.vocab, with_thousands(r.params),
               opts.lora_rank > 0 ? fmt::format(" frozen; LoRA rank {} on every projection: {} trainable",
                                                opts.lora_rank, with_thousands(r.trainable))
                                  : std::string());
    fmt::print("batch      B={} T={}, {} timed steps after {} warm-up, {} threads, {} ({}), {}\n",
               opts.batch, opts.seq, opts.steps, opts.warmup, r.threads, precision_name(opts.precision), b.why,
               f.gemm);
    fmt::print("cpu        {}; kernels {}\n", cpu_model(), backend::describe_isa());
    fmt::print("step       {:.1f} ms median (min {:.1f}, max {:.1f})\n", r.step_ms_median,
               r.step_ms_min, r.step_ms_max);
    fmt::print("phases     forward + backward {:.1f}, grad norm + AdamW {:.1f} ms\n", r.forward_backward_ms,
               r.optimizer_ms);
    fmt::print("throughput {:.0f} tokens/s, {:.1f} model GFLOP/s = {:.1f}% of {:.0f} GFLOP/s peak ({})\n",
               r.tokens_per_s, r.model_gflops, 100.0 * r.utilisation, opts.peak_gflops,
               peak_name(f, opts.precision));
    fmt::print("bandwidth  {:.1f} GB/s (a triad in place over 2 x {} MiB: after the steps, or the best on record in {})\n",
               bandwidth, backend::bandwidth_array_bytes() >> 20, backend::best_figures_path());
    fmt::print("memory     {:.0f} MiB peak RSS; planned: {}\n", r.max_rss_mb,
               describe_memory(r.memory, opts.precision));
    fmt::print("           (recompute {}: {:.0f} MiB of activations saved; Adam moments in {}, gradients in {})\n",
               recompute_name(opts.recompute), r.activation_saved_mb, moment_precision_name(opts.moments), f.grads);
    fmt::print("loss       {:.4f} first, {:.4f} last\n", r.loss_first, r.loss_last);
    if (!r.profile.empty()) print_profile(r, limits, opts.precision);
}

void run(const BenchFlags& f) {
    BenchPlan b = plan_bench(f);
    BenchResult r = run_benchmark(b.opts);
    if (!f.peak_gflops && r.utilisation > 1) {  // the peak was measured in a slow minute: again, as train does
        b.opts.peak_gflops = remeasured_peak_gflops(b.opts.precision);
        r.utilisation = r.model_gflops / b.opts.peak_gflops;
    }
    // Measured after the run, so that the triad's arrays (two of 128 MiB or more) are not in
    // the peak RSS it reports, which run_benchmark has read.
    const MachineLimits limits = b.opts.profile ? roofline_limits(r, b.opts) : MachineLimits{};
    const double bandwidth = backend::measured_bandwidth_gbs();
    if (f.json) {
        print_json(f, b, r, bandwidth);
    } else {
        print_report(f, b, r, bandwidth, limits);
    }
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto flags = std::make_shared<BenchFlags>();
    CLI::App* cmd = app.add_subcommand(
        "bench", "Time full training steps (forward, backward, AdamW) on random tokens");
    cmd->add_option("--model", flags->model, "Model preset: GPT-2's (gpt2, gpt2-mini, ...) or a Llama's (llama-1b, "
                                             "smollm2-135m, tinyllama-1.1b, ...)")
        ->capture_default_str();
    cmd->add_option("--layers", flags->layers, "Override n_layer")->check(integer_at_least(1));
    cmd->add_option("--heads", flags->heads, "Override n_head")->check(integer_at_least(1));
    cmd->add_option("--embd", flags->embd, "Override n_embd")->check(integer_at_least(1));
    cmd->add_option("--vocab", flags->vocab, "Override vocab_size")->check(integer_at_least(1));
    cmd->add_option("--kv-heads", flags->kv_heads, "Llama: override num_key_value_heads")->check(integer_at_least(1));
    cmd->add_option("--intermediate", flags->intermediate, "Llama: override the MLP's width")
        ->check(integer_at_least(1));
    cmd->add_option("--lora", flags->lora,
                    "Llama: train LoRA adapters of this rank on every projection over a random frozen base "
                    "(bf16 only in mixed precision); 0: every weight trains")
        ->check(integer_at_least(0));
    cmd->add_option("--batch", flags->batch, "Micro-batch size B")
        ->check(integer_at_least(1))->capture_default_str();
    cmd->add_option("--seq", flags->seq, "Sequence length T")
        ->check(integer_at_least(1))->capture_default_str();
    cmd->add_option("--steps", flags->steps, "Timed steps")
        ->check(integer_at_least(1))->capture_default_str();
    cmd->add_option("--warmup", flags->warmup, "Untimed steps before timing")
        ->check(integer_at_least(0))->capture_default_str();
    cmd->add_option("--threads", flags->threads, "Threads (default: every core)")
        ->check(integer_at_least(1));
    cmd->add_option("--peak-gflops", flags->peak_gflops,
                    "The machine's peak GFLOP/s, for the utilisation figure (default: measured at the start)")
        ->check(positive_number());
    cmd->add_option("--gemm", flags->gemm, "GEMM backend: onednn or naive")->capture_default_str();
    cmd->add_option("--precision", flags->precision, "fp32, bf16 (mixed), or auto: bf16 where the CPU has it")
        ->capture_default_str();
    cmd->add_option("--recompute", flags->recompute, "Activation recompute: none, gelu or block")
        ->capture_default_str();
    cmd->add_option("--moments", flags->moments, "Adam's moments in fp32, or bf16 (half their memory)")
        ->capture_default_str();
    cmd->add_option("--grads", flags->grads, "Gradients in fp32, or bf16 (half their memory; bf16 precision, not LoRA)")
        ->capture_default_str()
        ->check(CLI::IsMember({"fp32", "bf16"}));
    cmd->add_flag("--json", flags->json, "Print one JSON line");
    cmd->add_flag("--profile", flags->profile, "Time each kernel family");
    cmd->callback([flags] { run(*flags); });
}

}  // namespace lmforge::cli
