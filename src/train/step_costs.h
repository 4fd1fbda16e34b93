// The arithmetic and the memory traffic of one training step of a causal model, by kernel
// family (the names the model's profiler laps charge: matmul_fwd, attention_bwd, adamw, ...),
// derived from the model's shape, B, T, precision, recompute mode and LoRA: what bench's
// roofline (train/roofline.h) sets each family's measured time against.
//
// FLOPs: 2·M·N·K for each GEMM, and nothing else in the GEMMs' families (their bias adds and
// sums, LoRA's scaling and the copies to bf16 are bytes only); attention's products over the
// (query, key) pairs causal attention keeps, T(T+1)/2 per sequence and head: QKᵀ and PV
// forward; QKᵀ again, dP, dQ, dK and dV backward (its softmax not counted); an elementwise
// kernel by its formula's operations, a tanh, exp, square root or division one each.
//
// Bytes: what each kernel call must read and write at least: every buffer it reads once,
// every buffer it writes once, one it adds into (+=) or updates in place twice. Not counted:
// a kernel's own scratch (attention's score tiles, the LM head's blocks of logits), and its
// reads of an input again (the LM head reads the embedding once per block of rows), which a
// large enough cache would spare it. So the bytes are a floor on the traffic, and the time
// they take at the machine's bandwidth a floor on the family's time.
//
// Families whose time is charged to another's lap are counted where it is: recomputed
// activations mostly to the forward families (train.recompute = block reruns a block's
// forward under its own laps), the bf16 copies of gradients to matmul_bwd, the zeroing of
// gradients that backward adds into to the LM head's lap.
#pragma once

#include <string>
#include <vector>

#include "model/causal_lm.h"
#include "model/gpt2_acts.h"
#include "model/precision.h"
#include "optim/moments.h"

namespace lmforge {

struct FamilyCost {
    std::string family;
    double flops = 0, bytes = 0;  // per step
    // The bytes of each kernel pass (one GEMM, one elementwise sweep, ...): how much of them a
    // cache could serve depends on each pass's size, not on the sum (train/roofline.h).
    std::vector<double> passes;
    // On bf16 dot products (the GEMMs of a mixed-precision run): the bf16 peak is its compute
    // limit; fp32 arithmetic's otherwise.
    bool bf16_math = false;
};

// Per step of model (a Gpt2 or a Llama, with or without LoRA adapters) at its planned (B, T):
// one forward and backward over B·T tokens (every position a target, as bench's random
// batches), the gradient norm and AdamW with moments in `moments`. Families in the order a
// step first reaches them.
std::vector<FamilyCost> step_costs(const CausalLm& model, Recompute recompute, MomentPrecision moments);

// The FLOPs of the products with weight matrices: the linear layers' (matmul_fwd, matmul_bwd),
// the LM head's and LoRA's adapters' (lora_fwd, lora_bwd). Attention's are apart.
double weight_matmul_flops(const std::vector<FamilyCost>& costs);

}  // namespace lmforge
