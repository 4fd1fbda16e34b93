// LoRA (https://arxiv.org/abs/2106.09685): a frozen linear layer y = x·Wᵀ learns through a
// low-rank update, y += (alpha / rank) · dropout(x)·Aᵀ·Bᵀ, with A (rank, in) and B (out,
// rank) the only trained tensors. The options, the adapters' names (PEFT's, so that an
// adapter_model.safetensors is lmforge's parameters as they are), and the adapter's forward and
// backward on a slice of a (possibly fused) layer's output.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/gemm.h"
#include "model/precision.h"

namespace lmforge {

// The Llama projections an adapter may sit on, in a block's order.
enum class LoraTarget { Q, K, V, O, Gate, Up, Down };
inline constexpr int kLoraTargets = 7;
const char* lora_target_name(LoraTarget t);  // "q_proj", ..., "down_proj"
// "self_attn.q_proj", ..., "mlp.down_proj": the module path inside a block.
const char* lora_target_module(LoraTarget t);

struct LoraOptions {
    int64_t rank = 0;  // 0: no adapters (every weight trains)
    double alpha = 16;
    double dropout = 0;  // on the adapter's input, in training passes
    std::array<bool, kLoraTargets> targets{};
    uint64_t seed = 0;  // of the dropout masks
    std::string base;   // the checkpoint directory of the frozen base (recorded with the model)
    bool enabled() const { return rank > 0; }
    double scaling() const { return alpha / static_cast<double>(rank); }
    // "q_proj,v_proj" (PEFT's target_modules): InputError naming lora.targets for a
    // name that is no projection, or none at all.
    static std::array<bool, kLoraTargets> parse_targets(const std::string& list);
    std::string targets_list() const;  // "q_proj,v_proj"
};

// PEFT's name of a classifier's head, which trains whole beside the adapters.
inline constexpr const char* kLoraScore = "base_model.model.score.weight";

// PEFT's name of layer l's adapter tensor ("A" or "B") on target t:
// base_model.model.model.layers.{l}.self_attn.q_proj.lora_A.weight
std::string lora_tensor_name(int64_t layer, LoraTarget t, char which);

// One adapter in use: its tensors (fp32 parameters, their bf16 copies in mixed precision,
// gradients), its shape, and where its output goes in the layer's output rows.
struct LoraAdapter {
    const float *A = nullptr, *B = nullptr;        // (r, in), (out, r)
    const uint16_t *A_h = nullptr, *B_h = nullptr;  // mixed precision
    float *dA = nullptr, *dB = nullptr;
    int64_t in = 0, out = 0;
    int64_t offset = 0, stride = 0;  // output columns [offset, offset + out) of rows `stride` wide
    uint64_t salt = 0;               // its dropout masks' (layer, target)
    bool on() const { return A != nullptr; }
};

// Adapters that read one input, their outputs slices of one (possibly fused) layer output: q,
// k and v on a block's normed input; gate and up; or one alone. Their products share that
// input's passes: one GEMM makes every down-projection, one every gradient of A, one the
// input's gradient (dropout, a mask per adapter, takes them one by one).
inline constexpr int kLoraGroupMax = 3;
// A Llama block's groups, by their first and last targets.
inline constexpr std::array<std::array<LoraTarget, 2>, 4> kLoraGroups = {{{LoraTarget::Q, LoraTarget::V},
                                                                          {LoraTarget::O, LoraTarget::O},
                                                                          {LoraTarget::Gate, LoraTarget::Up},
                                                                          {LoraTarget::Down, LoraTarget::Down}}};
struct LoraGroup {
    std::array<const LoraAdapter*, kLoraGroupMax> adapters{};
    int size = 0;
    void add(const LoraAdapter& a) { adapters.at(size++) = &a; }
    int64_t in() const { return adapters[0]->in; }
};

// The scratch an adapter pass needs (N rows, rank r, widest input W, narrowest C for the groups'
// shared inputs), shared by all adapters.
struct LoraScratch {
    float* du = nullptr;        // (N, 3r)
    uint16_t* u_h = nullptr;    // (N, 3r) mixed precision
    float* x = nullptr;         // (N, W) the dropped input in fp32, or d(input) before masking
    uint16_t* x_h = nullptr;    // (N, W) the dropped input in bf16
    float* dBt = nullptr;       // (r, widest output) B's gradient transposed, before it is added
    float* A = nullptr;         // (3r, C) a group's A stacked: fp32
    uint16_t* A_h = nullptr;    // (3r, C) mixed precision
    float* dA = nullptr;        // (3r, C) a group's gradients of A, before they are added
};

// What every adapter pass takes: the GEMM, precision, rank, scaling, dropout and, in training,
// each row's dropout key (null: no dropout, as in evaluation).
struct LoraPass {
    backend::Gemm& gemm;
    Precision precision;
    int64_t N, rank;
    float scaling, dropout;
    const uint64_t* row_keys;
    LoraScratch scratch;
};

// For each adapter j of the group: y[:, offset : offset + out] += scaling · dropout(x)·Aᵀ·Bᵀ,
// keeping us (N, size·r) = scaling · dropout(x)·Aᵀ (adapter j's in columns j·r...) for backward.
// x is fp32 (x) or, in mixed precision, bf16 (x_h).
void lora_forward(const LoraPass& p, const LoraGroup& g, float* y, const float* x, const uint16_t* x_h, float* us);

// From dy (N, out) at each adapter's columns of rows `stride` wide (fp32 dy, or dy_h in mixed
// precision): dB += dyᵀ·us, dA += duᵀ·dropout(x), du = scaling · dy·B, and the input's gradient
// dropout'(Σ du·A) written to dx (N, in), or added to it when add_to_dx; null dx: not wanted.
void lora_backward(const LoraPass& p, const LoraGroup& g, float* dx, bool add_to_dx, const float* dy,
                   const uint16_t* dy_h, const float* x, const uint16_t* x_h, const float* us);

// Each row's dropout key for a training pass: from the seed, the optimizer step and the row's
// tokens, so that a row draws the same masks wherever it runs (any process, any micro-batch,
// before or after a resume) and other masks at every step.
void lora_row_keys(uint64_t* keys, uint64_t seed, int64_t step, const int32_t* tokens, int64_t B, int64_t T);

}  // namespace lmforge
