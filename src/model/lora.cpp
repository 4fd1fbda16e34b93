#include "model/lora.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <type_traits>

#include "core/bf16.h"
#include "core/error.h"
#include "core/rng.h"
#include "kernels/bf16.h"

namespace lmforge {

namespace {

constexpr const char* kNames[kLoraTargets] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
constexpr const char* kModules[kLoraTargets] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                                "mlp.down_proj"};

// Whether element c of position n survives dropout p: a hash of the position's key, the
// adapter's salt and the column, so that backward redraws forward's masks without keeping them.
inline bool kept(uint64_t key, uint64_t salt, int64_t c, float p) {
    const uint64_t h = mix_seed(key ^ salt, static_cast<uint64_t>(c));
    return static_cast<float>(h >> 40) * (1.0f / 16777216.0f) >= p;
}

// out (N, in) = mask ∘ x / (1 − p), in x's type.
template <class T>
void drop(T* out, const T* x, const LoraPass& p, const LoraAdapter& a) {
    const float inv_keep = 1.0f / (1.0f - p.dropout);
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < p.N; n++) {
        for (int64_t c = 0; c < a.in; c++) {
            const bool k = kept(p.row_keys[n], a.salt, c, p.dropout);
            if constexpr (std::is_same_v<T, float>) {
                out[n * a.in + c] = k ? x[n * a.in + c] * inv_keep : 0.0f;
            } else {
                out[n * a.in + c] = k ? to_bf16(from_bf16(x[n * a.in + c]) * inv_keep) : uint16_t{0};
            }
        }
    }
}

bool dropping(const LoraPass& p) { return p.dropout > 0.0f && p.row_keys != nullptr; }

}  // namespace

const char* lora_target_name(LoraTarget t) { return kNames[static_cast<int>(t)]; }
const char* lora_target_module(LoraTarget t) { return kModules[static_cast<int>(t)]; }

std::array<bool, kLoraTargets> LoraOptions::parse_targets(const std::string& list) {
    std::array<bool, kLoraTargets> on{};
    std::stringstream in(list);
    bool any = false;
    for (std::string name; std::getline(in, name, ',');) {
        name.erase(0, name.find_first_not_of(" \t"));
        name.erase(name.find_last_not_of(" \t") + 1);
        const auto* it = std::find(std::begin(kNames), std::end(kNames), name);
        if (it == std::end(kNames)) {
            throw InputError(fmt::format("lora.targets: \"{}\" names no tensor of a Llama block", name),
                             "choose among q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
        }
        on[it - std::begin(kNames)] = true;
        any = true;
    }
    if (!any) throw InputError("lora.targets names no projection", "for example \"q_proj,v_proj\"");
    return on;
}

std::string LoraOptions::targets_list() const {
    std::string s;
    for (int t = 0; t < kLoraTargets; t++) {
        if (!targets[t]) continue;
        if (!s.empty()) s.push_back(',');
        s.append(kNames[t]);
    }
    return s;
}

std::string lora_tensor_name(int64_t layer, LoraTarget t, char which) {
    return fmt::format("base_model.model.model.layers.{}.{}.lora_{}.weight", layer, lora_target_module(t), which);
}

void lora_row_keys(uint64_t* keys, uint64_t seed, int64_t step, const int32_t* tokens, int64_t B, int64_t T) {
    for (int64_t b = 0; b < B; b++) {
        uint64_t row = mix_seed(seed, static_cast<uint64_t>(step));
        for (int64_t t = 0; t < T; t++) row = mix_seed(row, static_cast<uint64_t>(tokens[b * T + t]));
        for (int64_t t = 0; t < T; t++) keys[b * T + t] = mix_seed(row, static_cast<uint64_t>(t));
    }
}

namespace {

// The group's A stacked (size·r, in): the adapter's own when alone, else copied to scratch.
template <class T>
const T* stacked(const LoraPass& p, const LoraGroup& g, const T* LoraAdapter::*A, T* scratch) {
    if (g.size == 1) return g.adapters[0]->*A;
    const int64_t n = p.rank * g.in();
    for (int j = 0; j < g.size; j++) std::copy_n(g.adapters[j]->*A, n, scratch + j * n);
    return scratch;
}

// us (N, r; columns of rows ld wide) = dropout(x)·Aᵀ, unscaled: each adapter masks x its own way.
void down_projection(const LoraPass& p, const LoraAdapter& a, const float* x, const uint16_t* x_h, float* us,
                     int64_t ld) {
    const bool half = p.precision == Precision::Bf16;
    if (dropping(p) && half) {
        drop(p.scratch.x_h, x_h, p, a);
        x_h = p.scratch.x_h;
    } else if (dropping(p)) {
        drop(p.scratch.x, x, p, a);
        x = p.scratch.x;
    }
    const backend::GemmShape down{.M = p.N, .N = p.rank, .K = a.in, .trans_b = true, .ldc = ld};
    if (half) {
        p.gemm.run_bf16(down, x_h, a.A_h, us);
    } else {
        p.gemm.run(down, x, a.A, us);
    }
}

// dB (out, r) += (usᵀ·dy)ᵀ and du (N, r; columns of rows ld wide) = dy·B, unscaled. us is read in
// fp32 (us) or, in mixed precision, bf16 (u_h), both rows ld wide. dB's product is taken
// transposed, so that dy's long side is the GEMM's N: oneDNN ran dyᵀ·us, M = out, 2.6x slower
// (gate_proj of Llama 3.2 1B at T = 512: 0.81 against 0.31 ms, bf16, Zen 5, 2 threads).
void adapter_dB_du(const LoraPass& p, const LoraAdapter& a, const float* dy, const uint16_t* dy_h, const float* us,
                   const uint16_t* u_h, int64_t ld, float* du) {
    const int64_t N = p.N, r = p.rank;
    const backend::GemmShape dBt{.M = r, .N = a.out, .K = N, .trans_a = true, .lda = ld, .ldb = a.stride};
    const backend::GemmShape dus{.M = N, .N = r, .K = a.out, .lda = a.stride, .ldc = ld};
    if (p.precision == Precision::Bf16) {
        p.gemm.run_bf16(dBt, u_h, dy_h + a.offset, p.scratch.dBt);
        p.gemm.run_bf16(dus, dy_h + a.offset, a.B_h, du);
    } else {
        p.gemm.run(dBt, us, dy + a.offset, p.scratch.dBt);
        p.gemm.run(dus, dy + a.offset, a.B, du);
    }
    for (int64_t o = 0; o < a.out; o++) {
        for (int64_t j = 0; j < r; j++) a.dB[o * r + j] += p.scratch.dBt[j * a.out + o];
    }
}

// From du (N, size·r; scaled, in the scratch: fp32 du, and u_h in mixed precision): every dA +=
// duᵀ·x in one GEMM, and dx (=, or += when add_to_dx) du·A stacked in another.
void input_side(const LoraPass& p, const LoraGroup& g, float* dx, bool add_to_dx, const float* x,
                const uint16_t* x_h) {
    const int64_t gr = g.size * p.rank, in = g.in();
    const bool alone = g.size == 1;
    float* dA = alone ? g.adapters[0]->dA : p.scratch.dA;
    const backend::GemmShape dAs{.M = gr, .N = in, .K = p.N, .trans_a = true, .accumulate = alone};
    const backend::GemmShape dxs{.M = p.N, .N = in, .K = gr, .accumulate = add_to_dx};
    if (p.precision == Precision::Bf16) {
        p.gemm.run_bf16(dAs, p.scratch.u_h, x_h, dA);
        if (dx != nullptr) p.gemm.run_bf16(dxs, p.scratch.u_h, stacked(p, g, &LoraAdapter::A_h, p.scratch.A_h), dx);
    } else {
        p.gemm.run(dAs, p.scratch.du, x, dA);
        if (dx != nullptr) p.gemm.run(dxs, p.scratch.du, stacked(p, g, &LoraAdapter::A, p.scratch.A), dx);
    }
    if (alone) return;
    const int64_t n = p.rank * in;
    for (int j = 0; j < g.size; j++) {
        float* to = g.adapters[j]->dA;
        const float* from = dA + j * n;
        for (int64_t i = 0; i < n; i++) to[i] += from[i];
    }
}

// The same with dropout, adapter by adapter: dA += duᵀ·dropout(x), d(dropped input) = du·A.
void input_side_dropped(const LoraPass& p, const LoraGroup& g, float* dx, bool add_to_dx, const float* x,
                        const uint16_t* x_h) {
    const int64_t N = p.N, r = p.rank, gr = g.size * r, in = g.in();
    const bool half = p.precision == Precision::Bf16;
    const float inv_keep = 1.0f / (1.0f - p.dropout);
    if (dx != nullptr && !add_to_dx) std::fill_n(dx, N * in, 0.0f);
    for (int j = 0; j < g.size; j++) {
        const LoraAdapter& a = *g.adapters[j];
        const backend::GemmShape dA{.M = r, .N = in, .K = N, .trans_a = true, .lda = gr, .accumulate = true};
        const backend::GemmShape dxs{.M = N, .N = in, .K = r, .lda = gr};
        // du·A goes to the fp32 scratch first, to be masked: in fp32 that scratch held the dropped
        // input, which dA's GEMM has read by then.
        if (half) {
            drop(p.scratch.x_h, x_h, p, a);
            p.gemm.run_bf16(dA, p.scratch.u_h + j * r, p.scratch.x_h, a.dA);
            if (dx != nullptr) p.gemm.run_bf16(dxs, p.scratch.u_h + j * r, a.A_h, p.scratch.x);
        } else {
            drop(p.scratch.x, x, p, a);
            p.gemm.run(dA, p.scratch.du + j * r, p.scratch.x, a.dA);
            if (dx != nullptr) p.gemm.run(dxs, p.scratch.du + j * r, a.A, p.scratch.x);
        }
        if (dx == nullptr) continue;
#pragma omp parallel for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            for (int64_t c = 0; c < in; c++) {
                if (kept(p.row_keys[n], a.salt, c, p.dropout)) dx[n * in + c] += p.scratch.x[n * in + c] * inv_keep;
            }
        }
    }
}

}  // namespace

void lora_forward(const LoraPass& p, const LoraGroup& g, float* y, const float* x, const uint16_t* x_h, float* us) {
    const int64_t N = p.N, r = p.rank, gr = g.size * r;
    const bool half = p.precision == Precision::Bf16;
    if (dropping(p)) {
        for (int j = 0; j < g.size; j++) down_projection(p, *g.adapters[j], x, x_h, us + j * r, gr);
    } else if (half) {
        p.gemm.run_bf16({.M = N, .N = gr, .K = g.in(), .trans_b = true}, x_h,
                        stacked(p, g, &LoraAdapter::A_h, p.scratch.A_h), us);
    } else {
        p.gemm.run({.M = N, .N = gr, .K = g.in(), .trans_b = true}, x, stacked(p, g, &LoraAdapter::A, p.scratch.A), us);
    }
    for (int64_t i = 0; i < N * gr; i++) us[i] *= p.scaling;
    if (half) kernels::to_bf16(p.scratch.u_h, us, N * gr);
    for (int j = 0; j < g.size; j++) {
        const LoraAdapter& a = *g.adapters[j];
        const backend::GemmShape up{
            .M = N, .N = a.out, .K = r, .trans_b = true, .lda = gr, .ldc = a.stride, .accumulate = true};
        if (half) {
            p.gemm.run_bf16(up, p.scratch.u_h + j * r, a.B_h, y + a.offset);
        } else {
            p.gemm.run(up, us + j * r, a.B, y + a.offset);
        }
    }
}

void lora_backward(const LoraPass& p, const LoraGroup& g, float* dx, bool add_to_dx, const float* dy,
                   const uint16_t* dy_h, const float* x, const uint16_t* x_h, const float* us) {
    const int64_t N = p.N, r = p.rank, gr = g.size * r;
    const bool half = p.precision == Precision::Bf16;
    if (half) kernels::to_bf16(p.scratch.u_h, us, N * gr);
    for (int j = 0; j < g.size; j++) {
        adapter_dB_du(p, *g.adapters[j], dy, dy_h, us + j * r, p.scratch.u_h + j * r, gr, p.scratch.du + j * r);
    }
    for (int64_t i = 0; i < N * gr; i++) p.scratch.du[i] *= p.scaling;
    if (half) kernels::to_bf16(p.scratch.u_h, p.scratch.du, N * gr);  // u_h holds du from here
    if (dropping(p)) {
        input_side_dropped(p, g, dx, add_to_dx, x, x_h);
    } else {
        input_side(p, g, dx, add_to_dx, x, x_h);
    }
}

}  // namespace lmforge
