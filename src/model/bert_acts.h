// BERT's activations for one (B, T): what forward saves for backward per layer, and the
// backward scratch shared by all layers. Sized from one table into one arena; a smaller (B, T)
// reuses it (dynamic padding).
#pragma once

#include <cstdint>
#include <vector>

#include "core/arena.h"
#include "model/bert_config.h"
#include "model/precision.h"

namespace lmforge {

// N = B·T rows. A layer's input x is the previous layer's output (post-LayerNorm, so fp32:
// it is also the residual stream), plus its bfloat16 copy in mixed precision.
// qkv, inter and gelu are fp32 in fp32 only (null in mixed precision, which keeps them in bf16:
// attention, GELU and the GEMMs read nothing else of them).
struct BertLayerActs {
    float* qkv;       // (N, 3H)
    float* atty;      // (N, H) attention output, heads side by side
    float* att_lse;   // (B, NH, T)
    float* res1;      // (N, H) x + attention branch
    float* h1;        // (N, H) LayerNorm(res1)
    float *h1_mean, *h1_rstd;  // (N)
    float* inter;     // (N, I) before GELU
    float* gelu;      // (N, I)
    float* res2;      // (N, H) h1 + feed-forward branch
    float* out;       // (N, H) LayerNorm(res2): the layer's output
    float *out_mean, *out_rstd;  // (N)
    // Mixed precision (null in fp32): the GEMM inputs, and qkv and inter, in bfloat16.
    uint16_t *qkv_h, *atty_h, *h1_h, *inter_h, *gelu_h, *out_h;
};

struct BertActs {
    float* embedded = nullptr;  // (N, H) word + position + token type
    float* x0 = nullptr;        // (N, H) LayerNorm(embedded): layer 0's input
    float *x0_mean = nullptr, *x0_rstd = nullptr;
    uint16_t* x0_h = nullptr;
    std::vector<BertLayerActs> layers;
    float* proj = nullptr;  // (N, H) a branch's output until its residual add
    // Heads. Classification: pooled input (B, H), pooler output (B, H), logits (B, L), losses
    // (B). Masked LM on the M <= N rows it reads: gathered hidden (M, H), transform (M, H)
    // before and after GELU, LayerNorm output and stats, per-row loss and log-sum-exp, the
    // vocabulary chunk scratch, and the gathered targets (M) and their rows (M).
    float *cls_in = nullptr, *pooled = nullptr, *class_logits = nullptr, *class_losses = nullptr;
    float *mlm_in = nullptr, *mlm_t = nullptr, *mlm_g = nullptr, *mlm_z = nullptr, *mlm_mean = nullptr,
          *mlm_rstd = nullptr, *mlm_losses = nullptr, *mlm_lse = nullptr, *mlm_max = nullptr, *logits_chunk = nullptr,
          *target_logit = nullptr;
    uint16_t *mlm_in_h = nullptr, *mlm_g_h = nullptr, *mlm_z_h = nullptr, *dlogits_chunk_h = nullptr;
    int32_t *mlm_targets = nullptr, *mlm_rows = nullptr;
    // Backward scratch.
    float *dx = nullptr, *dres = nullptr, *dtmp = nullptr, *datty = nullptr;  // (N, H)
    float* dqkv = nullptr;                                                    // (N, 3H)
    float *dgelu = nullptr, *dinter = nullptr;                                // (N, I)
    float *dhead_a = nullptr, *dhead_b = nullptr;                             // (N, H) head scratch
    uint16_t* dout_h = nullptr;                                               // (N, max(3H, I))
};

// head_one_pass: whether training's MLM decoder takes its one pass (kernels::lm_head_one_pass),
// which needs a larger scratch.
BertActs plan_bert_acts(const BertConfig& cfg, int64_t B, int64_t T, Precision precision, bool head_one_pass,
                        Arena& arena);
size_t bert_acts_bytes(const BertConfig& cfg, int64_t B, int64_t T, Precision precision, bool head_one_pass);

}  // namespace lmforge
