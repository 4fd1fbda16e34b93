// Llama's activations for one (B, T): what forward saves for backward, per layer, and the
// gradient buffers backward reuses from layer to layer, carved from one arena. Recompute
// follows GPT-2's modes (gpt2_acts.h): Gelu recomputes the pointwise outputs (both RMSNorms'
// and SwiGLU's), Block keeps only each block's output.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/arena.h"
#include "model/gpt2_acts.h"
#include "model/llama_config.h"
#include "model/lora.h"
#include "model/precision.h"

namespace lmforge {

// A GEMM's input, and the GEMM outputs kept for backward (qkv, gate_up), are kept in one
// precision: fp32 or, in mixed precision, bfloat16 (the _h buffers; the fp32 pointer of a GEMM
// output is then the scratch its projection and adapters add into before it is rounded, shared
// by the layers). The residual stream, the statistics and attention's output (which its
// backward reads, kernels/attention.h) stay fp32.
struct LlamaLayerActs {
    float* ln1;        // (N, C) RMSNorm of the block's input
    float* ln1_rstd;   // (N)
    float* qkv;        // (N, C + 2 KVC), q and k rotated
    float* atty;       // (N, C) attention output, heads side by side
    float* att_lse;    // (B, NH, T)
    float* res2;       // (N, C) residual after attention
    float* ln2;        // (N, C)
    float* ln2_rstd;   // (N)
    float* gate_up;    // (N, 2I)
    float* act;        // (N, I) silu(gate) · up
    float* res3;       // (N, C) the block's output
    uint16_t *ln1_h, *qkv_h, *atty_h, *ln2_h, *gate_up_h, *act_h;  // mixed precision (null in fp32)
    // LoRA: each group's (lora.h's kLoraGroups) scaling · dropout(x)·Aᵀ (N, rank per adapter in
    // use) for its backward, at the group's first target (null: no adapter).
    std::array<float*, kLoraTargets> lora_us{};
};

struct LlamaActs {
    float* embedded = nullptr;  // (N, C)
    std::vector<LlamaLayerActs> layers;
    float *lnf = nullptr, *lnf_rstd = nullptr;  // (N, C), (N)
    uint16_t* lnf_h = nullptr;                  // mixed precision: lnf in bf16 only
    float *rope_cos = nullptr, *rope_sin = nullptr;  // (T, HS/2) for positions 0..T-1
    float* proj = nullptr;  // (N, C) a projection's output until the residual add consumes it
    // Backward scratch, reused by every layer.
    float* dres = nullptr;      // (N, C) gradient of the residual stream
    float* dln = nullptr;       // (N, C)
    float* datty = nullptr;     // (N, C)
    float* dqkv = nullptr;      // (N, C + 2 KVC)
    float* dact = nullptr;      // (N, I)
    float* dgate_up = nullptr;  // (N, 2I) fp32
    uint16_t* dout_h = nullptr;  // mixed precision: (N, max(2I, C + 2 KVC)) a GEMM's gradient in bf16
    // LoRA's scratch (lora.h's LoraScratch) and each position's dropout key (N).
    float *lora_du = nullptr, *lora_x = nullptr, *lora_dBt = nullptr, *lora_A = nullptr, *lora_dA = nullptr;
    uint16_t *lora_u_h = nullptr, *lora_x_h = nullptr, *lora_A_h = nullptr;
    uint64_t* lora_keys = nullptr;
};

LlamaActs plan_llama_acts(const LlamaConfig& cfg, int64_t B, int64_t T, Precision precision, Recompute recompute,
                          const LoraOptions& lora, Arena& arena);
size_t llama_acts_bytes(const LlamaConfig& cfg, int64_t B, int64_t T, Precision precision, Recompute recompute,
                        const LoraOptions& lora = {});

}  // namespace lmforge
