// GPT-2's activations for one (B, T): what forward saves for backward, per layer, and the
// few gradient buffers backward reuses from layer to layer. Sized once from a table into one
// arena; a new (B, T) is an explicit re-plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/arena.h"
#include "model/gpt2_config.h"
#include "model/precision.h"

namespace lmforge {

// Activation recompute: what backward recomputes instead of keeping from forward.
//   None:  every layer keeps all it saves.
//   Gelu:  the outputs of one elementwise pass are recomputed: GELU's (the MLP's widest GEMM
//          input) from the pre-activation, and both layernorms' from their kept inputs and
//          statistics. Three cheap passes per layer for a third of its memory.
//   Block: a block keeps only its output; backward re-runs the block's forward from the block
//          before's output. One block's activations exist at a time.
// Layers that do not keep a buffer all point at one shared copy, so the code that runs the
// layers is the same in every mode. Gradients are bit-identical across modes.
enum class Recompute { None, Gelu, Block };

Recompute parse_recompute(const std::string& name);  // none | gelu | block; InputError otherwise
const char* recompute_name(Recompute r);

// A GEMM's input, and the GEMM outputs kept for backward (qkv, fch), are kept in one
// precision: fp32 or, in mixed precision, bfloat16 (the _h buffers); the other pointer is null.
// The residual stream (res2, res3) and the statistics stay fp32.
struct Gpt2LayerActs {
    float* ln1;       // (N, C)
    float* ln1_mean;  // (N)
    float* ln1_rstd;  // (N)
    float* qkv;       // (N, 3C)
    float* atty;      // (N, C)  attention output, heads side by side (fp32 in mixed precision
                      //         too: its backward reads it, kernels/attention.h says why; its
                      //         bf16 copy is Gpt2Acts::atty_h)
    float* att_lse;   // (B, NH, T)
    float* res2;      // (N, C)  residual after attention
    float* ln2;       // (N, C)
    float* ln2_mean;  // (N)
    float* ln2_rstd;  // (N)
    float* fch;       // (N, 4C)
    float* fch_gelu;  // (N, 4C)
    float* res3;      // (N, C)  residual after the MLP: the block's output
    // Mixed precision (null in fp32): the GEMM inputs, and qkv and fch, in bfloat16 (half the
    // bytes of the layer's largest buffers; attention and GELU read them so).
    uint16_t *ln1_h, *qkv_h, *ln2_h, *fch_h, *fch_gelu_h;
};

struct Gpt2Acts {
    float* encoded = nullptr;  // (N, C) token + position embedding
    std::vector<Gpt2LayerActs> layers;
    float *lnf = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr;  // (N, C), (N), (N)
    // dfch's room holds, in turn: proj and atty_h in forward (and in the block mode's
    // recompute, which ends before that block's backward starts); in the MLP's backward dfch,
    // then in mixed precision dln; in the attention's, datty with atty_h, datty with dqkv, then
    // dln with dqkv. Nothing in it outlives its turn.
    float* proj = nullptr;       // (N, C)   at dfch: a projection's output until the residual add
    // Mixed precision (null in fp32): c_proj's input, atty in bf16, rounded from the layer's
    // atty where c_proj's forward and backward read it: one pass over N·C floats in backward,
    // where keeping the copy took N·C bf16 per layer.
    uint16_t* atty_h = nullptr;  // (N, C)   at dfch + N·C
    // Backward scratch, reused by every layer.
    float* dres = nullptr;       // (N, C)   gradient of the residual stream
    float* dln = nullptr;        // (N, C)   at dfch in mixed precision, where c_fc's backward
                                 //          reads dout_h, not dfch
    float* datty = nullptr;      // (N, C)   at dfch
    float* dqkv = nullptr;       // (N, 3C)  at dfch + N·C
    float* dfch = nullptr;       // (N, 4C)  d(GELU output), then d(its input) in place
    // Mixed precision (null in fp32): lnf's bf16 copy, one scratch for the gradients fed to
    // other GEMMs, and dres's column sums (for the bias of the projection below a layernorm).
    uint16_t* lnf_h = nullptr;   // (N, C)
    uint16_t* dout_h = nullptr;  // (N, 4C)
    float* dres_sums = nullptr;  // (C)
};

// Carves Gpt2Acts for (B, T) out of `arena`: the same memory if it is large enough, else a
// fresh arena returned through it. (The heads' own buffers are causal_lm.h's.)
Gpt2Acts plan_gpt2_acts(const Gpt2Config& cfg, int64_t B, int64_t T, Precision precision, Recompute recompute,
                        Arena& arena);
// The bytes plan_gpt2_acts would take.
size_t gpt2_acts_bytes(const Gpt2Config& cfg, int64_t B, int64_t T, Precision precision, Recompute recompute);

}  // namespace lmforge
