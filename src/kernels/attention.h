// Multi-head self-attention on a fused QKV activation, tiled with an online softmax:
// no (T, T) matrix is ever stored, only one log-sum-exp per row, so memory per layer grows
// as T, not T². Backward recomputes the probabilities from the saved log-sum-exp
// (FlashAttention-2: https://arxiv.org/abs/2307.08691). Derivation: docs/derivations/attention.md.
#pragma once

#include <cstdint>

#include "core/bf16.h"

namespace lmforge::kernels {

// Which keys a query sees. GPT-2: causal (query t sees keys 0..t). BERT: bidirectional, with
// each sequence's padding at its end masked out: sequence b's keys key_len[b]..T-1 are
// invisible to every query (its padded query rows still attend to its real keys, as Hugging
// Face computes them). key_len null: no padding; each key_len[b] must lie in 1..T.
struct AttentionMask {
    bool causal = true;
    const int32_t* key_len = nullptr;  // (B)
};

// What the products (S = Q·Kᵀ, O = P·V and backward's) run in. Bf16: their inputs Q, K, V, P,
// dO, dS are rounded to bf16 and multiplied into fp32 sums by vdpbf16ps (as a bf16 GEMM is);
// the softmax, its sums and lse stay fp32. Only where attention_has_bf16_math(); elsewhere
// Bf16 computes in fp32, as Fp32 does.
enum class AttentionMath { Fp32, Bf16 };

// Whether AttentionMath::Bf16 runs in bf16 here: the kernels run at the avx512 level (or a
// native build's with AVX-512) on a CPU with AVX512_BF16.
bool attention_has_bf16_math();

// Grouped-query attention (https://arxiv.org/abs/2305.13245): NH query heads of HS = C / NH
// channels share NKV key/value heads (NKV divides NH), query head h reading key/value head
// h / (NH / NKV). NKV = NH is multi-head attention (GPT-2, BERT); NKV = 1 multi-query.
// qkv (B, T, C + 2·KVC), KVC = NKV·HS: q (C), k (KVC), v (KVC) side by side; query head h owns
// channels [h·HS, (h+1)·HS) of q, key/value head g [g·HS, (g+1)·HS) of k and of v.
// out (B, T, C): heads side by side.
// lse (B, NH, T): log-sum-exp of row t's scaled scores over its visible keys, saved for backward.
void attention_forward(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                       int64_t C, int64_t NH, int64_t NKV, const AttentionMask& mask = {},
                       AttentionMath math = AttentionMath::Fp32);

// Writes (=) dqkv (B, T, C + 2·KVC): every element is overwritten, so it needs no zeroing.
// dout, out: (B, T, C); lse and qkv as saved. A key/value head's gradient is the sum over its
// group of query heads. Keys no query sees get zero gradients. The mask and math must be the
// forward's.
void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int64_t B, int64_t T, int64_t C, int64_t NH, int64_t NKV,
                        const AttentionMask& mask = {}, AttentionMath math = AttentionMath::Fp32);

// Mixed precision: the same with qkv kept in bf16, as the models keep it. Bf16 math reads the
// same bf16 values either way, so these give bit for bit what the functions above give on qkv
// widened; elsewhere they widen qkv to fp32 first. Backward's out stays fp32: each dS is
// P ∘ (dP − D) with D = rowsum(dO ∘ O), a difference that is small where a row's attention is
// near uniform, and O's rounding to bf16 goes straight into it. (bert-tiny's masked-LM test
// run, 4000 steps: a validation loss of 0.35 on average over 6 seeds with O rounded to bf16
// for backward, 0.30 with it in fp32, and higher for 5 seeds of the 6.)
void attention_forward(float* out, float* lse, const bf16* qkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                       int64_t NKV, const AttentionMask& mask, AttentionMath math);
void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse, const bf16* qkv,
                        int64_t B, int64_t T, int64_t C, int64_t NH, int64_t NKV, const AttentionMask& mask,
                        AttentionMath math);

}  // namespace lmforge::kernels
