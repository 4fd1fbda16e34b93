// GPT-2's activations for one (B, T): what forward saves for backward, per layer, and the
// few gradient buffers backward reuses from layer to layer. Sized once from a table into one
// arena; a new (B, T) is an explicit re-plan.
#pragma once

#include <cstdint>
#include <vector>

#include "core/arena.h"
#include "model/gpt2_config.h"
#include "model/precision.h"

namespace lmforge {

struct Gpt2LayerActs {
    float* ln1;       // (N, C)
    float* ln1_mean;  // (N)
    float* ln1_rstd;  // (N)
    float* qkv;       // (N, 3C)
    float* atty;      // (N, C)  attention output, heads side by side
    float* att_lse;   // (B, NH, T)
    float* attproj;   // (N, C)
    float* res2;      // (N, C)  residual after attention
    float* ln2;       // (N, C)
    float* ln2_mean;  // (N)
    float* ln2_rstd;  // (N)
    float* fch;       // (N, 4C)
    float* fch_gelu;  // (N, 4C)
    float* fcproj;    // (N, C)
    float* res3;      // (N, C)  residual after the MLP: the block's output
    // Mixed precision: bfloat16 copies of the GEMM inputs, kept for backward (null in fp32).
    uint16_t *ln1_h, *atty_h, *ln2_h, *fch_gelu_h;
};

struct Gpt2Acts {
    float* encoded = nullptr;  // (N, C) token + position embedding
    std::vector<Gpt2LayerActs> layers;
    float *lnf = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr;  // (N, C), (N), (N)
    float* logits = nullptr;  // (N, Vp); backward overwrites it with dlogits
    float* losses = nullptr;  // (N)
    float* lse = nullptr;     // (N)
    // Backward scratch, reused by every layer.
    float* dres = nullptr;      // (N, C)  gradient of the residual stream
    float* dln = nullptr;       // (N, C)
    float* datty = nullptr;     // (N, C)
    float* dqkv = nullptr;      // (N, 3C)
    float* dfch_gelu = nullptr;  // (N, 4C)
    float* dfch = nullptr;      // (N, 4C)
    // Mixed precision (null in fp32): lnf's bf16 copy, the bf16 dlogits the LM head's
    // backward reads, and one scratch for the gradients fed to other GEMMs.
    uint16_t* lnf_h = nullptr;      // (N, C)
    uint16_t* dlogits_h = nullptr;  // (N, Vp)
    uint16_t* dout_h = nullptr;     // (N, 4C)
};

// Carves Gpt2Acts for (B, T) out of a fresh arena, which it returns through `arena`.
Gpt2Acts plan_gpt2_acts(const Gpt2Config& cfg, int64_t B, int64_t T, Precision precision, Arena& arena);

}  // namespace lmforge
