// Per-kernel microbenchmarks (Google Benchmark) on the shapes of the comparison configs, each
// reported against the machine's peak: compute-bound kernels in GFLOP/s and as a share of the
// precision's peak, measured on the same threads (backend/peak.h); memory-bound kernels in
// GB/s of traffic (bytes each pass must read and write) and as a share of the bandwidth limit,
// the least time those bytes take from the cache levels that can hold them and from memory,
// measured on the same threads (backend/bandwidth.h); next to BM_MemoryCopy, a plain copy.
//
//   ./build/release/bench/kernels_bench                       # every kernel
//   ./build/release/bench/kernels_bench --benchmark_filter=Attention
// Threads: every core (OMP_NUM_THREADS to change). Figures, not tests: nothing here can fail.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/amx_tiles.h"
#include "backend/bandwidth.h"
#include "backend/gemm.h"
#include "backend/gemm_onednn.h"
#include "backend/threads.h"
#include "core/aligned_buffer.h"
#include "core/rng.h"
#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/bf16.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/lm_head_loss.h"
#include "model/precision.h"

namespace lmforge {
namespace {

AlignedBuffer<float> random_buffer(int64_t n, uint64_t seed, float scale = 1.0f) {
    AlignedBuffer<float> b(n);
    Rng rng(seed);
    for (int64_t i = 0; i < n; i++) b[i] = (rng.uniform() * 2.0f - 1.0f) * scale;
    return b;
}

AlignedBuffer<bf16> to_half(const AlignedBuffer<float>& x) {
    AlignedBuffer<bf16> h(x.size());
    kernels::to_bf16(h.data(), x.data(), static_cast<int64_t>(x.size()));
    return h;
}

// Times one iteration of the benchmark loop (manual timing, so the counters below can be
// plain numbers rather than Google Benchmark's "per second" rates).
template <class F>
void timed(benchmark::State& state, double& seconds, F&& body) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    benchmark::ClobberMemory();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    seconds += s;
}

// Achieved GFLOP/s and its share of the precision's peak, from FLOPs per iteration.
void report_flops(benchmark::State& state, double seconds, double flops, Precision p) {
    const double rate = flops * static_cast<double>(state.iterations()) / seconds;
    state.counters["GFLOP/s"] = rate / 1e9;
    state.counters["%peak"] = 100.0 * rate / (peak_gflops(p) * 1e9);
}

// Achieved GB/s of traffic (bytes per iteration a pass must read and write), and the share of
// the bandwidth limit it reaches: a pass's data may come from the caches up to their capacity,
// the rest from memory. Above the limit, the levels were measured in a slow minute of a shared
// host: once more, keeping the higher figures.
void report_bytes(benchmark::State& state, double seconds, double bytes) {
    const double per_iteration = seconds / static_cast<double>(state.iterations());
    state.counters["GB/s"] = bytes / per_iteration / 1e9;
    double share = backend::least_memory_seconds(bytes, backend::measured_memory_levels()) / per_iteration;
    if (share > 1) share = backend::least_memory_seconds(bytes, backend::remeasured_memory_levels()) / per_iteration;
    state.counters["%bandwidth"] = 100.0 * share;
}

// ---- compute-bound -------------------------------------------------------------------------

// Linear layers (rows = B·T; in, out from the block): config B/C's at 4096 rows, and GPT-2
// 124M's at config A's 256, where B's rows 3072 floats apart take the copy to another stride
// (gemm_onednn.cpp). Arg 0: fp32, 1: bf16.
void BM_Gemm(benchmark::State& state) {
    const int64_t M = state.range(1), K = state.range(2), N = state.range(3);
    const bool half = state.range(0) == 1;
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    const auto a = random_buffer(M * K, 1), b = random_buffer(K * N, 2);
    const auto ah = to_half(a), bh = to_half(b);
    AlignedBuffer<float> c(M * N);
    double seconds = 0;
    for (auto _ : state) {
        timed(state, seconds, [&] {
            if (half) {
                gemm->run_bf16({.M = M, .N = N, .K = K}, ah.data(), bh.data(), c.data());
            } else {
                gemm->run({.M = M, .N = N, .K = K}, a.data(), b.data(), c.data());
            }
        });
    }
    report_flops(state, seconds, 2.0 * M * N * K, half ? Precision::Bf16 : Precision::Fp32);
}
BENCHMARK(BM_Gemm)
    ->ArgNames({"bf16", "rows", "in", "out"})
    ->ArgsProduct({{0, 1}, {4096}, {384}, {1152, 1536}})
    ->Args({0, 4096, 1536, 384})
    ->Args({1, 4096, 1536, 384})
    ->ArgsProduct({{0, 1}, {256}, {768}, {2304, 3072}})
    ->Args({0, 256, 3072, 768})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// A linear layer's three bf16 products, on oneDNN's kernels as lmforge picks them (first choice
// 0) and on oneDNN's first choice for every product (1; backend/gemm_onednn.cpp says where they
// differ). Product 0: the forward x·Wᵀ (B transposed), 1: the input gradient dy·W (B plain), 2:
// the weight gradient dyᵀ·x (A transposed). Shapes: Llama-1B's gate_up and down_proj at T = 512,
// and config C's c_fc at 4096 rows.
void BM_LinearProduct(benchmark::State& state) {
    backend::OnednnGemm gemm({.first_choice_kernels = state.range(0) == 1});
    const int64_t product = state.range(1), rows = state.range(2), in = state.range(3), out = state.range(4);
    const backend::GemmShape shape = product == 0   ? backend::GemmShape{.M = rows, .N = out, .K = in, .trans_b = true}
                                     : product == 1 ? backend::GemmShape{.M = rows, .N = in, .K = out}
                                                    : backend::GemmShape{.M = out, .N = in, .K = rows, .trans_a = true};
    const auto a = to_half(random_buffer(shape.M * shape.K, 1)), b = to_half(random_buffer(shape.K * shape.N, 2));
    AlignedBuffer<float> c(shape.M * shape.N);
    gemm.run_bf16(shape, a.data(), b.data(), c.data(), nullptr);  // its kernel generated
    double seconds = 0;
    for (auto _ : state) timed(state, seconds, [&] { gemm.run_bf16(shape, a.data(), b.data(), c.data(), nullptr); });
    state.SetLabel(gemm.bf16_kernel(shape));
    report_flops(state, seconds, shape.flops(), Precision::Bf16);
}
BENCHMARK(BM_LinearProduct)
    ->ArgNames({"first_choice", "product", "rows", "in", "out"})
    ->ArgsProduct({{0, 1}, {0, 1, 2}, {512}, {2048}, {16384}})
    ->ArgsProduct({{0, 1}, {0, 1, 2}, {512}, {8192}, {2048}})
    ->ArgsProduct({{0, 1}, {0, 1, 2}, {4096}, {384}, {1536}})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// Causal attention; FLOPs counted as the useful products only (forward Q·Kᵀ and P·V; backward
// dP, dS·K, dSᵀ·Q and Pᵀ·dO) over the causal half: 2·B·NH·T(T+1)/2·HS each. Args: math (0 fp32;
// 1 bf16 on dot products; 2 bf16 with the products AMX tiles take on them, where the CPU has
// them), against the peak of the precision where it runs, B, T, C, NH, NKV: configs C and A, and
// Llama 3.2 1B at T = 512.
void attention_case(benchmark::State& state, bool backward) {
    const bool half = state.range(0) >= 1;
    if (state.range(0) == 2) {
        backend::use_detected_tile_unit();
    } else {
        backend::use_tile_unit(std::nullopt);
    }
    const int64_t B = state.range(1), T = state.range(2), C = state.range(3), NH = state.range(4);
    const int64_t NKV = state.range(5), W = C + 2 * NKV * (C / NH);
    const auto math = half ? kernels::AttentionMath::Bf16 : kernels::AttentionMath::Fp32;
    const auto qkv = random_buffer(B * T * W, 3), dout = random_buffer(B * T * C, 4);
    const auto qkv_h = to_half(qkv);  // bf16 math reads a bf16 qkv, as mixed precision's models keep it
    AlignedBuffer<float> out(B * T * C), lse(B * NH * T), dqkv(B * T * W);
    // The forward (first untimed, for backward's out and lse), or the backward, on q.
    const auto run = [&](const auto* q, bool backward_pass) {
        if (backward_pass) {
            kernels::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), q, B, T, C, NH, NKV, {},
                                        math);
        } else {
            kernels::attention_forward(out.data(), lse.data(), q, B, T, C, NH, NKV, {}, math);
        }
    };
    const auto run_on_its_qkv = [&](bool backward_pass) {
        if (half) {
            run(qkv_h.data(), backward_pass);
        } else {
            run(qkv.data(), backward_pass);
        }
    };
    run_on_its_qkv(false);
    double seconds = 0;
    for (auto _ : state) timed(state, seconds, [&] { run_on_its_qkv(backward); });
    const double product = 2.0 * B * NH * (T * (T + 1) / 2.0) * (C / NH);
    const bool on_bf16 = half && kernels::attention_has_bf16_math();
    report_flops(state, seconds, (backward ? 4.0 : 2.0) * product, on_bf16 ? Precision::Bf16 : Precision::Fp32);
    backend::use_detected_tile_unit();
}

// Configs C and A, and Llama 3.2 1B at T = 512, in fp32 and bf16, and on tiles where there are.
void attention_shapes(benchmark::internal::Benchmark* b) {
    b->ArgNames({"math", "B", "T", "C", "NH", "NKV"});
    std::vector<int64_t> maths = {0, 1};
    if (backend::bf16_tiles_usable()) maths.push_back(2);
    b->ArgsProduct({maths, {16}, {256}, {384}, {6}, {6}})->ArgsProduct({maths, {4}, {64}, {768}, {12}, {12}});
    b->ArgsProduct({maths, {1}, {512}, {2048}, {32}, {8}});
}
void BM_AttentionForward(benchmark::State& state) { attention_case(state, false); }
void BM_AttentionBackward(benchmark::State& state) { attention_case(state, true); }
BENCHMARK(BM_AttentionForward)->Apply(attention_shapes)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_AttentionBackward)->Apply(attention_shapes)->Unit(benchmark::kMillisecond)->UseManualTime();

// LM head + cross-entropy, config B: N = 2048, C = 384, V = 50257; arg 0: fp32, 1: bf16.
// Forward and backward in vocabulary chunks, and training's one pass over row blocks
// (lm_head_loss_train). Useful FLOPs: forward 2·N·C·V; backward and the one pass 4·N·C·V and
// 6·N·C·V (the backward's recomputed logits not counted).
enum class HeadPass { Forward, Backward, Train };
template <class In>
void lm_head_case(benchmark::State& state, HeadPass pass, const AlignedBuffer<In>& x, const AlignedBuffer<In>& wte,
                  Precision precision) {
    const int64_t N = 2048, C = 384, V = 50257, Vp = 50304;
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    std::vector<int32_t> targets(N);
    Rng rng(7);
    for (auto& t : targets) t = static_cast<int32_t>(rng.below(V));
    const kernels::LmHeadLossShape s{
        .N = N, .C = C, .V = V, .Vp = Vp, .chunk = kernels::lm_head_chunk(N, V), .rows = kernels::lm_head_rows(N, V)};
    const int64_t scratch_floats = kernels::lm_head_scratch(N, V, true);
    AlignedBuffer<float> losses(N), lse(N), logits(scratch_floats), dx(N * C), dwte(Vp * C), scratch(N);
    AlignedBuffer<In> dlogits(std::is_same_v<In, float> ? 0 : scratch_floats);
    In* dl = nullptr;  // fp32: in place over the logits, as the model runs it
    if constexpr (std::is_same_v<In, float>) dl = logits.data();
    else dl = dlogits.data();
    kernels::lm_head_loss_forward(*gemm, s, losses.data(), lse.data(), x.data(), wte.data(), nullptr,
                                  targets.data(), logits.data(), scratch.data());
    double seconds = 0;
    for (auto _ : state) {
        timed(state, seconds, [&] {
            if (pass == HeadPass::Backward) {
                kernels::lm_head_loss_backward(*gemm, s, dx.data(), dwte.data(), nullptr, false, x.data(), wte.data(),
                                               nullptr, lse.data(), targets.data(), 1.0f / N, logits.data(), dl);
            } else if (pass == HeadPass::Train) {
                kernels::lm_head_loss_train(*gemm, s, losses.data(), lse.data(), dx.data(), dwte.data(), nullptr,
                                            false, x.data(), wte.data(), nullptr, targets.data(), 1.0f / N,
                                            logits.data(), dl, scratch.data());
            } else {
                kernels::lm_head_loss_forward(*gemm, s, losses.data(), lse.data(), x.data(), wte.data(), nullptr,
                                              targets.data(), logits.data(), scratch.data());
            }
        });
    }
    const double passes = pass == HeadPass::Forward ? 2.0 : pass == HeadPass::Backward ? 4.0 : 6.0;
    report_flops(state, seconds, passes * N * C * V, precision);
}
void lm_head_case(benchmark::State& state, HeadPass pass) {
    const auto x = random_buffer(2048 * 384, 5), wte = random_buffer(50304 * 384, 6, 0.1f);
    if (state.range(0) == 1) {
        lm_head_case(state, pass, to_half(x), to_half(wte), Precision::Bf16);
    } else {
        lm_head_case(state, pass, x, wte, Precision::Fp32);
    }
}
void BM_LmHeadLossForward(benchmark::State& state) { lm_head_case(state, HeadPass::Forward); }
void BM_LmHeadLossBackward(benchmark::State& state) { lm_head_case(state, HeadPass::Backward); }
void BM_LmHeadLossTrain(benchmark::State& state) { lm_head_case(state, HeadPass::Train); }
BENCHMARK(BM_LmHeadLossForward)->ArgName("bf16")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_LmHeadLossBackward)->ArgName("bf16")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_LmHeadLossTrain)->ArgName("bf16")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();

// A frozen LM head's training pass (LoRA's), Llama 3.2 1B's: N = 512, C = 2048, V = 128256,
// bf16; it streams the vocabulary in chunks of the arg's columns (0: lmforge's chunk).
// Useful FLOPs: 4·N·C·V (logits and dx).
void BM_LmHeadLossFrozen(benchmark::State& state) {
    const int64_t N = 512, C = 2048, V = 128256;
    const auto x = to_half(random_buffer(N * C, 5)), wte = to_half(random_buffer(V * C, 6, 0.1f));
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    std::vector<int32_t> targets(N);
    Rng rng(7);
    for (auto& t : targets) t = static_cast<int32_t>(rng.below(V));
    const int64_t chunk = state.range(0) > 0 ? state.range(0) : kernels::lm_head_chunk(N, V);
    const kernels::LmHeadLossShape s{.N = N, .C = C, .V = V, .Vp = V, .chunk = chunk, .rows = N};
    AlignedBuffer<float> losses(N), lse(N), logits(N * chunk), dx(N * C), target_logit(N);
    double seconds = 0;
    for (auto _ : state) {
        timed(state, seconds, [&] {
            kernels::lm_head_loss_train(*gemm, s, losses.data(), lse.data(), dx.data(), kernels::GradOut(), nullptr, false,
                                        x.data(), wte.data(), nullptr, targets.data(), 1.0f / N, logits.data(),
                                        static_cast<bf16*>(nullptr), target_logit.data());
        });
    }
    report_flops(state, seconds, 4.0 * N * C * V, Precision::Bf16);
}
BENCHMARK(BM_LmHeadLossFrozen)->ArgName("chunk")->Arg(0)->Arg(2048)->Arg(8192)->Arg(16384)
    ->Unit(benchmark::kMillisecond)->UseManualTime();

// ---- memory-bound --------------------------------------------------------------------------

constexpr int64_t kRows = 4096, kWidth = 384;  // config C's activations: (B·T, C)

void BM_MemoryCopy(benchmark::State& state) {  // the reference: read n floats, write n floats
    const int64_t n = kRows * 4 * kWidth;
    const auto src = random_buffer(n, 8);
    AlignedBuffer<float> dst(n);
    double seconds = 0;
    for (auto _ : state) {
        timed(state, seconds, [&] {
#pragma omp parallel for simd schedule(static)
            for (int64_t i = 0; i < n; i++) dst[i] = src[i];
        });
    }
    report_bytes(state, seconds, 2.0 * n * sizeof(float));
}
BENCHMARK(BM_MemoryCopy)->Unit(benchmark::kMillisecond)->UseManualTime();

// Residual add fused with the next layernorm, bf16 output: reads a, b; writes res (fp32), out (bf16).
void BM_ResidualLayerNorm(benchmark::State& state) {
    const int64_t N = kRows, C = kWidth;
    const auto a = random_buffer(N * C, 9), b = random_buffer(N * C, 10), w = random_buffer(C, 11),
               bias = random_buffer(C, 12);
    AlignedBuffer<float> res(N * C), mean(N), rstd(N);
    AlignedBuffer<bf16> out(N * C);
    double seconds = 0;
    for (auto _ : state) {
        timed(state, seconds, [&] {
            kernels::residual_layernorm_forward(res.data(), out.data(), mean.data(), rstd.data(), a.data(), b.data(),
                                                w.data(), bias.data(), N, C);
        });
    }
    report_bytes(state, seconds, N * C * (3.0 * sizeof(float) + sizeof(bf16)));
}
BENCHMARK(BM_ResidualLayerNorm)->Unit(benchmark::kMillisecond)->UseManualTime();

// GELU on the MLP's hidden layer (N, 4C): forward as mixed precision runs it, from the bf16
// pre-activation GPT-2 keeps to a bf16 output; backward reads two fp32, writes one.
void BM_GeluForward(benchmark::State& state) {
    const int64_t n = kRows * 4 * kWidth;
    const auto x = to_half(random_buffer(n, 13, 3.0f));
    AlignedBuffer<bf16> y(n);
    double seconds = 0;
    for (auto _ : state) {
        timed(state, seconds, [&] {
            kernels::gelu_forward(y.data(), x.data(), n);
        });
    }
    report_bytes(state, seconds, 2.0 * n * sizeof(bf16));
}
void BM_GeluBackward(benchmark::State& state) {
    const int64_t n = kRows * 4 * kWidth;
    const auto x = random_buffer(n, 14, 3.0f), dy = random_buffer(n, 15);
    AlignedBuffer<float> dx(n);
    double seconds = 0;
    for (auto _ : state) {
        timed(state, seconds, [&] {
            kernels::gelu_backward(dx.data(), dy.data(), x.data(), n);
        });
    }
    report_bytes(state, seconds, 3.0 * n * sizeof(float));
}
BENCHMARK(BM_GeluForward)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_GeluBackward)->Unit(benchmark::kMillisecond)->UseManualTime();

// AdamW over GPT-2 124M's parameters with the bf16 mirror, the moments in fp32 or bf16:
// reads p, g, m, v; writes p, m, v and the bf16 copy. Ranges split over threads as
// optim/adamw.cpp does.
template <class Moment>
void BM_AdamW(benchmark::State& state) {
    const int64_t n = 124'439'808;
    auto p = random_buffer(n, 16), g = random_buffer(n, 17);
    AlignedBuffer<Moment> m(n), v(n);  // zeroed
    AlignedBuffer<bf16> mirror(n);
    const auto step = [&] {
#pragma omp parallel
        {
            const auto [i0, i1] = backend::thread_slice(n, omp_get_thread_num(), omp_get_num_threads());
            const kernels::AdamWHyper h{.weight_decay = 0.1f};
            if constexpr (std::is_same_v<Moment, float>) {
                kernels::adamw_update(p.data() + i0, m.data() + i0, v.data() + i0, g.data() + i0, i1 - i0, h,
                                      mirror.data() + i0);
            } else {
                kernels::adamw_update(p.data() + i0, m.data() + i0, v.data() + i0, g.data() + i0, i1 - i0, h, i0,
                                      mirror.data() + i0);
            }
        }
    };
    // Untimed: the first step writes the moments' and the copy's pages for the first time, and
    // a gigabyte of page faults is not AdamW's speed (4.5 against 52 GB/s on Zen 5).
    step();
    double seconds = 0;
    for (auto _ : state) timed(state, seconds, step);
    report_bytes(state, seconds, n * (3.0 * sizeof(float) + 4.0 * sizeof(Moment) + sizeof(bf16)));
}
BENCHMARK(BM_AdamW<float>)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);
BENCHMARK(BM_AdamW<bf16>)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

}  // namespace
}  // namespace lmforge

int main(int argc, char** argv) {
    lmforge::backend::set_threads(0, "OMP_NUM_THREADS");
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::AddCustomContext("threads", std::to_string(omp_get_max_threads()));
    std::string levels;
    for (const lmforge::backend::MemoryLevel& m : lmforge::backend::measured_memory_levels()) {
        levels += (levels.empty() ? "" : ", ") + m.name + " " + std::to_string(static_cast<int>(m.gbs)) + " GB/s";
    }
    benchmark::AddCustomContext("bandwidth", levels);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
