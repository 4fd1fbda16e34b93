#include "train/step_costs.h"

#include <array>

#include "core/error.h"
#include "kernels/attention.h"
#include "model/gpt2.h"
#include "model/gpt2_acts.h"
#include "model/llama.h"

namespace lmforge {

namespace {

constexpr double kF32 = 4;   // bytes of an fp32 element
constexpr double kHalf = 2;  // of a bf16 one

// The costs by family, added to as a step's kernels are walked through in the model's order.
class Ledger {
public:
    explicit Ledger(Precision p) : half_(p == Precision::Bf16) {}

    bool half() const { return half_; }
    // Bytes of an element of the GEMMs' inputs: weights, and the activations written only to
    // feed a GEMM (bf16 in mixed precision).
    double in() const { return half_ ? kHalf : kF32; }

    // One kernel pass of the family.
    void add(const std::string& family, double flops, double bytes, bool bf16_math = false) {
        FamilyCost& c = cost(family);
        c.flops += flops;
        c.bytes += bytes;
        c.passes.push_back(bytes);
        c.bf16_math = c.bf16_math || bf16_math;
    }

    // C (M, N) = A (M, K) · B (K, N), with A and B of the GEMMs' input type and C fp32 (or of
    // c_bytes an element), written or added into; `more` bytes read besides (a bias).
    void gemm(const std::string& family, double M, double N, double K, bool accumulate, double more = 0,
              double c_bytes = kF32) {
        add(family, 2 * M * N * K, in() * (M * K + K * N) + c_bytes * M * N * (accumulate ? 2 : 1) + more, half_);
    }

    // n fp32 elements copied to bf16.
    void to_half(const std::string& family, double n) { add(family, 0, n * (kF32 + kHalf)); }

    // A lap the model takes with no kernel in it: a row of no cost, not an unknown one.
    void empty_lap(const std::string& family) { cost(family); }

    std::vector<FamilyCost> take() { return std::move(costs_); }

private:
    FamilyCost& cost(const std::string& family) {
        for (FamilyCost& c : costs_) {
            if (c.family == family) return c;
        }
        costs_.emplace_back();
        costs_.back().family = family;
        return costs_.back();
    }

    bool half_;
    std::vector<FamilyCost> costs_;
};

// Rows, sequences and widths of a step: N = B·T rows of C channels, attention over NH query
// heads, its fused q, k, v rows W = C + 2·KV wide (KV: the key or value heads' width).
struct Dims {
    double B, T, N, C, NH, W;
};

// ---- layers both families have --------------------------------------------------------------

// (N, in) → (N, out), with a bias or none; the output of out_bytes an element.
void linear_forward(Ledger& l, const Dims& d, double in, double out, bool bias, double out_bytes = kF32) {
    l.gemm("matmul_fwd", d.N, out, in, false, bias ? kF32 * out : 0, out_bytes);
}

struct LinearGrad {
    bool bias = false;    // has a bias, whose gradient is the column sums of dout
    bool weight = true;   // the weight's gradient is taken (not a frozen weight, LoRA's base)
    bool convert = true;  // in mixed precision dout arrives in fp32 and is copied to bf16 here
                          // (with the bias sums); else the kernel before wrote the copy (and
                          // the sums)
    bool onto = false;    // dinp added to what LoRA's adapters wrote there (the layer has some)
};

// dinp = dout·Wᵀ written; dW = inpᵀ·dout overwritten (a step of one micro-batch); the bias's
// gradient summed in a pass over dout, or in the pass that copies it to bf16. Only the
// products count as FLOPs here, so that the weights' add up to flops_per_token's.
void linear_backward(Ledger& l, const Dims& d, double in, double out, LinearGrad g) {
    const char* f = "matmul_bwd";
    const double dbias = g.bias ? 2 * kF32 * out : 0;
    if (l.half() && g.convert) l.add(f, 0, d.N * out * (kF32 + kHalf) + dbias);
    if (!l.half() && g.bias) l.add(f, 0, kF32 * d.N * out + dbias);
    l.gemm(f, d.N, in, out, g.onto);
    if (g.weight) l.gemm(f, in, out, d.N, false);
}

// (query, key) pairs causal attention keeps, over every sequence of one head.
double causal_pairs(const Dims& d) { return d.B * d.T * (d.T + 1) / 2; }

// Whether attention's products run on bf16 dot products (kernels/attention.h).
bool attention_bf16(const Ledger& l) { return l.half() && kernels::attention_has_bf16_math(); }

// Reads qkv (of qkv_bytes an element), writes the heads' outputs (and their bf16 copy in mixed
// precision) and each row's log-sum-exp.
void attention_forward(Ledger& l, const Dims& d, double qkv_bytes = kF32) {
    const double lse = d.B * d.NH * d.T;
    l.add("attention_fwd", 2 * 2 * d.C * causal_pairs(d), qkv_bytes * d.N * d.W + kF32 * (d.N * d.C + lse),
          attention_bf16(l));
    if (l.half()) l.to_half("attention_fwd", d.N * d.C);
}

// Reads dout, out, lse and qkv (of qkv_bytes an element); writes dqkv. Five products: the
// probabilities again, dP, dQ, dK, dV.
void attention_backward(Ledger& l, const Dims& d, double qkv_bytes = kF32) {
    const double lse = d.B * d.NH * d.T;
    l.add("attention_bwd", 5 * 2 * d.C * causal_pairs(d),
          kF32 * (d.N * d.W + 2 * d.N * d.C + lse) + qkv_bytes * d.N * d.W, attention_bf16(l));
}

// The LM head and its loss in training: the logits' GEMM, dx's and (unless frozen) dW's, and
// the chunked passes' second logits GEMM where it does not take the one pass. Reads x and the
// head's matrix; writes dx, dW (its padded rows zeroed), each row's loss and sums. Its lap
// also holds the zeroing of the gradients backward only adds into.
void lm_head(Ledger& l, const Dims& d, double V, double Vp, bool weight_grad, bool one_pass, double zeroed) {
    const char* f = "lm_head_loss_fwd_bwd";
    const double products = 2 + (weight_grad ? 1 : 0) + (one_pass ? 0 : 1);
    const double rows = kF32 * 6 * d.N;  // targets read; losses, lse, target logit, row max, loss sums written
    const double dw = weight_grad ? kF32 * Vp * d.C : 0;
    l.add(f, products * 2 * d.N * V * d.C, l.in() * (d.N * d.C + V * d.C) + kF32 * d.N * d.C + dw + rows, l.half());
    if (zeroed > 0) l.add(f, 0, kF32 * zeroed);
}

// A pass over n elements reading `reads` fp32 arrays and writing `writes` fp32 ones and
// `half_writes` of the GEMMs' input type, `ops` operations an element; `more` bytes besides
// (per-row statistics, gains).
void elementwise(Ledger& l, const std::string& family, double n, double ops, double reads, double writes,
                 double half_writes, double more = 0) {
    l.add(family, ops * n, n * (kF32 * (reads + writes) + l.in() * half_writes) + more);
}

// ---- GPT-2 ----------------------------------------------------------------------------------

// LayerNorm (N, C), alone or after a residual add (res = a + b, also written): its output in
// the GEMMs' input type, the rows' mean and rstd, the gains and biases read.
void layernorm_forward(Ledger& l, const std::string& family, const Dims& d, bool residual) {
    elementwise(l, family, d.N * d.C, residual ? 8 : 7, residual ? 2 : 1, residual ? 1 : 0, 1,
                kF32 * (2 * d.N + 2 * d.C));
}

// Reads dout, x, mean, rstd and the gains; adds into dinp and the gains' and biases' gradients.
// Where a projection onto the residual stream comes below, in mixed precision, it also writes
// dinp's bf16 copy and column sums for that projection's backward (Gpt2::norm_backward).
void layernorm_backward(Ledger& l, const Dims& d, bool projection_below) {
    const bool copy = l.half() && projection_below;
    elementwise(l, "layernorm_bwd", d.N * d.C, 14, 3, 1, copy ? 1 : 0, kF32 * (2 * d.N + (copy ? 6 : 5) * d.C));
}

// Reads c_fc's output, kept in the GEMMs' input type; writes GELU's in that type.
void gelu_forward(Ledger& l, const std::string& family, const Dims& d) {
    const double n = d.N * 4 * d.C;
    l.add(family, 8 * n, 2 * l.in() * n);
}

// Reads d(GELU output) and its input; writes the gradient in fp32, or in mixed precision in
// bf16 with c_fc's bias sums (one pass for three), its input read in bf16 too.
void gelu_backward(Ledger& l, const Dims& d) {
    const double n = d.N * 4 * d.C;
    if (l.half()) {
        elementwise(l, "gelu_bwd", n, 13, 1, 0, 2, kF32 * 2 * 4 * d.C);
    } else {
        elementwise(l, "gelu_bwd", n, 12, 2, 1, 0);
    }
}

// res2 = residual + c_proj(attention(c_attn(ln_1))), then ln_2 (Gpt2::attention_branch). qkv
// and c_fc's output are kept in the GEMMs' input type.
void gpt2_attention_branch(Ledger& l, const Dims& d) {
    linear_forward(l, d, d.C, 3 * d.C, true, l.in());
    attention_forward(l, d, l.in());
    linear_forward(l, d, d.C, d.C, true);
    layernorm_forward(l, "residual_layernorm_fwd", d, true);
}

void gpt2_mlp_hidden(Ledger& l, const Dims& d) {
    linear_forward(l, d, d.C, 4 * d.C, true, l.in());
    gelu_forward(l, "gelu_fwd", d);
}

// Token and position rows summed; backward adds dout into both tables' rows.
void encoder_forward(Ledger& l, const Dims& d) {
    l.add("encoder_fwd", d.N * d.C, kF32 * (d.N + d.N * d.C + d.T * d.C + d.N * d.C));
}
void encoder_backward(Ledger& l, const Dims& d) {
    l.add("encoder_bwd", 2 * d.N * d.C, kF32 * (d.N + d.N * d.C + 2 * d.N * d.C + 2 * d.T * d.C));
}

void gpt2_forward(Ledger& l, const Dims& d, int64_t layers) {
    encoder_forward(l, d);
    layernorm_forward(l, "layernorm_fwd", d, false);
    for (int64_t i = 0; i < layers; i++) {
        gpt2_attention_branch(l, d);
        gpt2_mlp_hidden(l, d);
        linear_forward(l, d, 4 * d.C, d.C, true);
        layernorm_forward(l, "residual_layernorm_fwd", d, true);
    }
}

// What Gpt2::recompute_block reruns for a block before its backward, under the laps it runs.
void gpt2_recompute(Ledger& l, const Dims& d, Recompute r) {
    if (r == Recompute::None) return;
    layernorm_forward(l, "recompute", d, false);
    if (r == Recompute::Block) {
        gpt2_attention_branch(l, d);
        gpt2_mlp_hidden(l, d);
    } else {
        layernorm_forward(l, "recompute", d, false);
        gelu_forward(l, "recompute", d);
    }
}

// The c_proj layers read dout (the residual's gradient) as the layernorm backward above them
// left it: in mixed precision already in bf16, with its column sums.
void gpt2_backward_block(Ledger& l, const Dims& d, bool first_block) {
    linear_backward(l, d, 4 * d.C, d.C, {.bias = true, .convert = false});
    gelu_backward(l, d);
    linear_backward(l, d, d.C, 4 * d.C, {.bias = true, .convert = false});
    layernorm_backward(l, d, true);
    if (l.half()) l.to_half("recompute", d.N * d.C);  // atty's bf16 copy, for c_proj
    linear_backward(l, d, d.C, d.C, {.bias = true, .convert = false});
    attention_backward(l, d, l.in());
    linear_backward(l, d, d.C, 3 * d.C, {.bias = true});
    layernorm_backward(l, d, !first_block);
}

void gpt2_backward(Ledger& l, const Dims& d, int64_t layers, Recompute r) {
    l.add("zero_scratch", 0, kF32 * d.N * d.C);
    layernorm_backward(l, d, layers > 0);
    for (int64_t i = layers - 1; i >= 0; i--) {
        if (i < layers - 1) gpt2_recompute(l, d, r);  // the last block's activations are still there
        gpt2_backward_block(l, d, i == 0);
    }
    encoder_backward(l, d);
}

void gpt2_step(Ledger& l, const Gpt2& m, const Dims& d, Recompute r) {
    const Gpt2Config& cfg = m.config();
    gpt2_forward(l, d, cfg.n_layer);
    lm_head(l, d, static_cast<double>(cfg.vocab_size), static_cast<double>(cfg.padded_vocab()), true,
            m.head_one_pass(), static_cast<double>(m.zeroed_grad_floats()));
    gpt2_backward(l, d, cfg.n_layer, r);
}

// ---- Llama ----------------------------------------------------------------------------------

// A Llama's widths beyond Dims, and what trains.
struct LlamaShape {
    double I = 0, KV = 0, HS = 0;
    double rank = 0;                           // LoRA's; 0: every weight trains
    std::array<bool, kLoraTargets> targets{};  // the projections that have adapters
    bool trains_base() const { return rank == 0; }
};

// RMSNorm (N, C), alone or after a residual add: output in the GEMMs' input type, rstd, gains.
void rmsnorm_forward(Ledger& l, const Dims& d, bool residual) {
    elementwise(l, "rmsnorm_fwd", d.N * d.C, residual ? 5 : 4, residual ? 2 : 1, residual ? 1 : 0, 1,
                kF32 * (d.N + d.C));
}

// Reads dout, x, rstd and the gains; adds into dinp and, where it trains, the gains' gradient.
// Where a projection onto the residual stream comes below, in mixed precision, it also writes
// dinp's bf16 copy (Llama::norm_backward).
void rmsnorm_backward(Ledger& l, const Dims& d, const LlamaShape& s, bool projection_below) {
    const bool copy = l.half() && projection_below;  // dres's bf16 copy for the projection below
    elementwise(l, "rmsnorm_bwd", d.N * d.C, 8, 3, 1, copy ? 1 : 0,
                kF32 * (d.N + d.C + (s.trains_base() ? 2 * d.C : 0)));
}

// On q's and k's heads of each qkv (or dqkv) row; the cos and sin tables read. Backward in
// place; forward in mixed precision from the fp32 qkv into its bf16 copy, v's channels too.
void rope(Ledger& l, const std::string& family, const Dims& d, const LlamaShape& s) {
    const double n = d.N * (d.C + s.KV), tables = kF32 * d.T * s.HS;
    if (family == "rope_fwd" && l.half()) {
        l.add(family, 3 * n, (kF32 + kHalf) * d.N * d.W + tables);
    } else {
        l.add(family, 3 * n, kF32 * 2 * n + tables);
    }
}

// Reads gate_up (N, 2I) in the GEMMs' input type and writes its output in that type; in mixed
// precision right after the GEMM (from_gemm) it reads the GEMM's fp32 gate_up instead, and
// writes the bf16 copy kept as well.
void swiglu_forward(Ledger& l, const Dims& d, const LlamaShape& s, bool from_gemm) {
    const double bytes = l.half() && from_gemm ? d.N * s.I * (2 * kF32 + 3 * kHalf) : 3 * l.in() * d.N * s.I;
    l.add("swiglu_fwd", 5 * d.N * s.I, bytes);
}

// Reads dout (N, I) and gate_up (N, 2I); writes d(gate_up) in the GEMMs' input type.
void swiglu_backward(Ledger& l, const Dims& d, const LlamaShape& s) {
    l.add("swiglu_bwd", 10 * d.N * s.I, d.N * s.I * (kF32 + 4 * l.in()));
}

// The adapters of rank r on targets first..last of a block (model/lora.h's group: one input
// in → each its slice `out` of the layer's output): forward us = x·Aᵀ for all, scaled, then
// y += u·Bᵀ each; backward, each dB += dyᵀ·u and du = dy·B, then for all, scaled, dA += duᵀ·x
// and dx = du·A, written (input_grad: the input's gradient is wanted). Whether there are any.
bool adapters(Ledger& l, const Dims& d, const LlamaShape& s, LoraTarget first, LoraTarget last, bool forward,
              bool input_grad = true) {
    const std::array<double, kLoraTargets> in = {d.C, d.C, d.C, d.C, d.C, d.C, s.I};
    const std::array<double, kLoraTargets> out = {d.C, s.KV, s.KV, d.C, s.I, s.I, d.C};
    const double r = s.rank;
    double gr = 0;
    for (int t = static_cast<int>(first); t <= static_cast<int>(last); t++) gr += s.rank > 0 && s.targets[t] ? r : 0;
    if (gr == 0) return false;
    const double x = in[static_cast<int>(first)];
    const char* f = forward ? "lora_fwd" : "lora_bwd";
    if (forward) {
        l.gemm(f, d.N, gr, x, false);
        elementwise(l, f, d.N * gr, 0, 1, 1, 0);  // the scaling: as a bias, not counted
    }
    if (l.half()) l.to_half(f, d.N * gr);
    for (int t = static_cast<int>(first); t <= static_cast<int>(last); t++) {
        if (!s.targets[t]) continue;
        if (forward) l.gemm(f, d.N, out[t], r, true);
        if (!forward) l.gemm(f, out[t], r, d.N, true);
        if (!forward) l.gemm(f, d.N, r, out[t], false);
    }
    if (forward) return true;
    elementwise(l, f, d.N * gr, 0, 1, 1, 0);
    if (l.half()) l.to_half(f, d.N * gr);
    l.gemm(f, gr, x, d.N, true);
    if (input_grad) l.gemm(f, d.N, x, gr, false);
    return true;
}

// res2 = residual + o_proj(attention(rope(qkv(ln1)))), then the post-attention norm
// (Llama::attention_branch).
void llama_attention_branch(Ledger& l, const Dims& d, const LlamaShape& s) {
    linear_forward(l, d, d.C, d.W, false);
    adapters(l, d, s, LoraTarget::Q, LoraTarget::V, true);
    rope(l, "rope_fwd", d, s);
    attention_forward(l, d, l.in());
    linear_forward(l, d, d.C, d.C, false);
    adapters(l, d, s, LoraTarget::O, LoraTarget::O, true);
    rmsnorm_forward(l, d, true);
}

void llama_mlp_up(Ledger& l, const Dims& d, const LlamaShape& s) {
    linear_forward(l, d, d.C, 2 * s.I, false);
    adapters(l, d, s, LoraTarget::Gate, LoraTarget::Up, true);
}

// Token rows gathered (from LoRA's bf16 base in mixed precision); backward adds dout into the
// table's rows where it trains.
void embedding_forward(Ledger& l, const Dims& d, const LlamaShape& s) {
    const double table = s.trains_base() ? kF32 : l.in();
    l.add("embedding_fwd", 0, kF32 * (d.N + d.N * d.C) + table * d.N * d.C);
}
void embedding_backward(Ledger& l, const Dims& d, const LlamaShape& s) {
    if (s.trains_base()) l.add("embedding_bwd", d.N * d.C, kF32 * (d.N + d.N * d.C + 2 * d.N * d.C));
    if (!s.trains_base()) l.empty_lap("embedding_bwd");  // LoRA's base embedding is frozen
}

void llama_forward(Ledger& l, const Dims& d, const LlamaShape& s, int64_t layers) {
    embedding_forward(l, d, s);
    rmsnorm_forward(l, d, false);
    for (int64_t i = 0; i < layers; i++) {
        llama_attention_branch(l, d, s);
        llama_mlp_up(l, d, s);
        swiglu_forward(l, d, s, true);
        linear_forward(l, d, s.I, d.C, false);
        adapters(l, d, s, LoraTarget::Down, LoraTarget::Down, true);
        rmsnorm_forward(l, d, true);
    }
}

// What Llama::recompute_block reruns for a block before its backward, under the laps it runs.
void llama_recompute(Ledger& l, const Dims& d, const LlamaShape& s, Recompute r) {
    if (r == Recompute::None) return;
    rmsnorm_forward(l, d, false);
    if (r == Recompute::Block) {
        llama_attention_branch(l, d, s);
        llama_mlp_up(l, d, s);
    } else {
        rmsnorm_forward(l, d, false);
    }
    swiglu_forward(l, d, s, r == Recompute::Block);
    l.empty_lap("recompute");  // each of those took its own lap
}

// down_proj and o_proj read dout (the residual's gradient) as the RMSNorm backward above them
// left it: in mixed precision already in bf16.
void llama_mlp_backward(Ledger& l, const Dims& d, const LlamaShape& s) {
    const bool lora = !s.trains_base();
    bool adapted = adapters(l, d, s, LoraTarget::Down, LoraTarget::Down, false);
    linear_backward(l, d, s.I, d.C, {.weight = !lora, .convert = false, .onto = adapted});
    swiglu_backward(l, d, s);
    adapted = adapters(l, d, s, LoraTarget::Gate, LoraTarget::Up, false);
    linear_backward(l, d, d.C, 2 * s.I, {.weight = !lora, .convert = false, .onto = adapted});
    rmsnorm_backward(l, d, s, true);
}

void llama_attention_backward(Ledger& l, const Dims& d, const LlamaShape& s, bool first_block) {
    const bool lora = !s.trains_base();
    bool adapted = adapters(l, d, s, LoraTarget::O, LoraTarget::O, false);
    linear_backward(l, d, d.C, d.C, {.weight = !lora, .convert = false, .onto = adapted});
    attention_backward(l, d, l.in());
    rope(l, "rope_bwd", d, s);
    if (l.half()) l.to_half("rope_bwd", d.N * d.W);
    // Under LoRA the embedding is frozen: the first block's input gradient is not taken.
    const bool input_grad = !(first_block && lora);
    adapted = adapters(l, d, s, LoraTarget::Q, LoraTarget::V, false, input_grad);
    if (!input_grad) return;
    linear_backward(l, d, d.C, d.W, {.weight = !lora, .convert = false, .onto = adapted});
    rmsnorm_backward(l, d, s, !first_block);
}

void llama_backward(Ledger& l, const Dims& d, const LlamaShape& s, int64_t layers, Recompute r) {
    l.add("rmsnorm_bwd", 0, kF32 * d.N * d.C);  // d(residual) zeroed first
    rmsnorm_backward(l, d, s, layers > 0);
    for (int64_t i = layers - 1; i >= 0; i--) {
        if (i < layers - 1) llama_recompute(l, d, s, r);
        llama_mlp_backward(l, d, s);
        llama_attention_backward(l, d, s, i == 0);
    }
    embedding_backward(l, d, s);
}

LlamaShape llama_shape(const Llama& m) {
    const LlamaConfig& cfg = m.config();
    LlamaShape s;
    s.I = static_cast<double>(cfg.intermediate);
    s.KV = static_cast<double>(cfg.kv_width());
    s.HS = static_cast<double>(cfg.head_size());
    s.rank = static_cast<double>(m.lora().rank);
    s.targets = m.lora().targets;
    return s;
}

void llama_step(Ledger& l, const Llama& m, const Dims& d, Recompute r) {
    const LlamaConfig& cfg = m.config();
    const LlamaShape s = llama_shape(m);
    llama_forward(l, d, s, cfg.n_layer);
    lm_head(l, d, static_cast<double>(cfg.vocab_size), static_cast<double>(cfg.padded_vocab()), s.trains_base(),
            m.head_one_pass(), static_cast<double>(m.zeroed_grad_floats()));
    llama_backward(l, d, s, cfg.n_layer, r);
}

// ---- the optimizer --------------------------------------------------------------------------

// The gradient norm reads every gradient; AdamW reads each gradient and updates the parameter
// and both moments in place, writing the parameter's bf16 copy in mixed precision. Gradients
// kept in bf16 are read at 2 bytes, after backward rounded its windows into them.
void optimizer(Ledger& l, const Model& m, MomentPrecision moments) {
    const auto grads = static_cast<double>(m.params().size());
    const double grad = m.grads_in_bf16() ? kHalf : kF32;
    if (m.grads_in_bf16()) {
        const auto rounded = static_cast<double>(m.grads_rounded());
        l.add("grads_to_bf16", 0, rounded * (kF32 + kHalf));
    }
    l.add("grad_norm", 2 * grads, grad * grads);
    double n = 0;  // what AdamW sweeps: every tensor's floats, its padding rows too
    for (const ParamSpec& s : m.layout().specs()) n += static_cast<double>(s.reserved);
    const double moment = moments == MomentPrecision::F32 ? kF32 : kHalf;
    const double mirror = m.precision() == Precision::Bf16 ? kHalf : 0;
    l.add("adamw", 15 * n, n * (2 * kF32 + grad + 4 * moment + mirror));
}

Dims dims(const CausalLm& m, double NH, double W) {
    const auto B = static_cast<double>(m.batch()), T = static_cast<double>(m.seq_len());
    return {B, T, B * T, static_cast<double>(m.width()), NH, W};
}

}  // namespace

std::vector<FamilyCost> step_costs(const CausalLm& model, Recompute recompute, MomentPrecision moments) {
    if (model.num_labels() > 0) throw Error("step_costs: a language model's step only, not a classifier's");
    Ledger l(model.precision());
    if (const auto* gpt2 = dynamic_cast<const Gpt2*>(&model)) {
        const Gpt2Config& cfg = gpt2->config();
        gpt2_step(l, *gpt2, dims(model, static_cast<double>(cfg.n_head), 3.0 * static_cast<double>(cfg.n_embd)),
                  recompute);
    } else if (const auto* llama = dynamic_cast<const Llama*>(&model)) {
        const LlamaConfig& cfg = llama->config();
        llama_step(l, *llama, dims(model, static_cast<double>(cfg.n_head), static_cast<double>(cfg.qkv_width())),
                   recompute);
    } else {
        throw Error("step_costs: a GPT-2 or a Llama");
    }
    optimizer(l, model, moments);
    return l.take();
}

double weight_matmul_flops(const std::vector<FamilyCost>& costs) {
    double flops = 0;
    for (const FamilyCost& c : costs) {
        const bool weights = c.family == "matmul_fwd" || c.family == "matmul_bwd" ||
                             c.family == "lm_head_loss_fwd_bwd" || c.family == "lora_fwd" || c.family == "lora_bwd";
        if (weights) flops += c.flops;
    }
    return flops;
}

}  // namespace lmforge
