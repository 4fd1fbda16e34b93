// Work splits over (batch, head, query tile) in forward and over (batch, key/value head) in
// backward, so each thread owns whole rows of its outputs. A query tile meets the keys in blocks, as many
// of each block as its rows may see; every product of a (query tile, key block) pair — S = Q·Kᵀ,
// O += P·V, dP = dO·Vᵀ, dQ += dS·K, dK += dSᵀ·Q, dV += Pᵀ·dO — is a small GEMM run on the
// calling thread (backend::tile_gemm), so the inner loops are oneDNN's JIT kernels; only the
// softmax and the masking are written here, one row at a time (kernels/attention_tiling.h).
// Asked for bf16 math on a CPU with AVX512_BF16, both hand over to kernels/attention_bf16.cpp.
#include "kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "backend/tile_gemm.h"
#include "kernels/attention_tiling.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

using attention_tiling::kKeyBlock;
using attention_tiling::kTile;
using attention_tiling::key_end;
using attention_tiling::key_len_of;
using attention_tiling::thread_scratch;
using attention_tiling::throw_if_failed;
using backend::tile_gemm;

#if LMFORGE_ISA_AVX512
// kernels/attention_bf16.cpp: the same on bf16 dot products, where the CPU has AVX512_BF16.
bool attention_has_bf16_math();
// In: fp32 or bf16, the type of qkv.
template <class In>
void attention_forward_bf16(float* out, float* lse, const In* qkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                            int64_t NKV, const AttentionMask& mask);
template <class In>
void attention_backward_bf16(float* dqkv, const float* dout, const float* out, const float* lse, const In* qkv,
                             int64_t B, int64_t T, int64_t C, int64_t NH, int64_t NKV, const AttentionMask& mask);
#else
bool attention_has_bf16_math() { return false; }
#endif

void attention_forward(float* out, float* lse, const float* qkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                       int64_t NKV, const AttentionMask& mask, AttentionMath math) {
#if LMFORGE_ISA_AVX512
    if (math == AttentionMath::Bf16 && attention_has_bf16_math())
        return attention_forward_bf16(out, lse, qkv, B, T, C, NH, NKV, mask);
#else
    (void)math;  // no bf16 dot products at this level
#endif
    const int64_t HS = C / NH, C3 = C + 2 * NKV * HS, KVC = NKV * HS, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
    const int64_t num_tiles = (T + kTile - 1) / kTile;
    backend::prepare_tile_gemm();
    std::atomic<bool> no_scratch{false};

#pragma omp parallel
    {
        std::vector<float> scores;  // (query, key) of one block
        float* s = thread_scratch(scores, kTile * kKeyBlock, no_scratch);
#pragma omp for collapse(3) schedule(dynamic)
        for (int64_t b = 0; b < B; b++) {
            for (int64_t h = 0; h < NH; h++) {
                for (int64_t qt = num_tiles - 1; qt >= 0; qt--) {  // longest rows first
                    if (s == nullptr) continue;
                    const int64_t i0 = qt * kTile, nq = std::min(T, i0 + kTile) - i0;
                    const float* q = qkv + (b * T + i0) * C3 + h * HS;
                    const float* k = qkv + b * T * C3 + C + h / group * HS;
                    float* o = out + (b * T + i0) * C + h * HS;
                    attention_tiling::forward_tile(
                        {i0, nq, key_len_of(mask, b, T), o, C, HS, lse + (b * NH + h) * T + i0}, mask, s,
                        [&](int64_t j0, int64_t nk) {
                            tile_gemm(nq, nk, HS, scale, q, {false, C3}, k + j0 * C3, {true, C3}, 0.0f, s, kKeyBlock);
                        },
                        [](int64_t, int64_t) {},
                        [&](int64_t j0, int64_t nk) {
                            tile_gemm(nq, HS, nk, 1.0f, s, {false, kKeyBlock}, k + j0 * C3 + KVC, {false, C3},
                                      j0 == 0 ? 0.0f : 1.0f, o, C);
                        });
                }
            }
        }
    }
    throw_if_failed(no_scratch);
    backend::check_tile_gemms();
}

void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse, const float* qkv,
                        int64_t B, int64_t T, int64_t C, int64_t NH, int64_t NKV, const AttentionMask& mask,
                        AttentionMath math) {
#if LMFORGE_ISA_AVX512
    if (math == AttentionMath::Bf16 && attention_has_bf16_math())
        return attention_backward_bf16(dqkv, dout, out, lse, qkv, B, T, C, NH, NKV, mask);
#else
    (void)math;
#endif
    const int64_t HS = C / NH, C3 = C + 2 * NKV * HS, KVC = NKV * HS;
    const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
    // With P = softmax(S) recomputed from lse and dP = dO·Vᵀ:  dS = P ∘ (dP − rowsum(dO ∘ O)),
    // dQ = scale·dS·K,  dK = scale·dSᵀ·Q,  dV = Pᵀ·dO, block by block (BackwardBlock says which
    // writes its outputs' rows first). Keys no query sees are zeroed.
    backend::prepare_tile_gemm();
    std::atomic<bool> no_scratch{false};
    std::vector<float> row_dot_sums;
    float* dots = thread_scratch(row_dot_sums, B * NH * T, no_scratch);  // rowsum(dO ∘ O), as lse
#pragma omp parallel
    {
        if (dots != nullptr) attention_tiling::row_dots(dots, dout, out, B, T, C, NH);
        std::vector<float> p_block, ds_block;  // (query, key)
        float* p = thread_scratch(p_block, kTile * kKeyBlock, no_scratch);
        float* ds = thread_scratch(ds_block, kTile * kKeyBlock, no_scratch);
        const auto block = [&](const attention_tiling::BackwardBlock& k) {
            const float* q = qkv + (k.b * T + k.i0) * C3 + k.h * HS;
            const float* dO = dout + (k.b * T + k.i0) * C + k.h * HS;
            const float* kp = qkv + (k.b * T + k.j0) * C3 + C + k.kvh * HS;
            float* dq = dqkv + (k.b * T + k.i0) * C3 + k.h * HS;
            float* dk = dqkv + (k.b * T + k.j0) * C3 + C + k.kvh * HS;
            tile_gemm(k.nq, k.nk, HS, scale, q, {false, C3}, kp, {true, C3}, 0.0f, p, kKeyBlock);
            tile_gemm(k.nq, k.nk, HS, 1.0f, dO, {false, C}, kp + KVC, {true, C3}, 0.0f, ds, kKeyBlock);  // dP
            attention_tiling::softmax_backward_block(p, ds, k, mask, T, lse, dots, NH, scale, [](int64_t) {});
            const float first_q = k.first_q ? 0.0f : 1.0f, first_kv = k.first_kv ? 0.0f : 1.0f;
            tile_gemm(k.nq, HS, k.nk, 1.0f, ds, {false, kKeyBlock}, kp, {false, C3}, first_q, dq, C3);
            tile_gemm(k.nk, HS, k.nq, 1.0f, ds, {true, kKeyBlock}, q, {false, C3}, first_kv, dk, C3);
            tile_gemm(k.nk, HS, k.nq, 1.0f, p, {true, kKeyBlock}, dO, {false, C}, first_kv, dk + KVC, C3);
        };
#pragma omp for collapse(2) schedule(dynamic)
        for (int64_t b = 0; b < B; b++) {
            // One thread owns a key/value head and every query head of its group, so the
            // group's contributions to dK and dV add up without any two threads writing them.
            for (int64_t kvh = 0; kvh < NKV; kvh++) {
                if (p == nullptr || ds == nullptr || dots == nullptr) continue;
                attention_tiling::for_each_backward_block(mask, b, kvh, T, NH / NKV, block);
                attention_tiling::zero_unseen_keys(dqkv + b * T * C3 + C + kvh * HS, C3, KVC, HS,
                                                   key_end(mask, T - 1, key_len_of(mask, b, T)), T);
            }
        }
    }
    throw_if_failed(no_scratch);
    backend::check_tile_gemms();
}

namespace {

// x (n) widened to fp32.
std::vector<float> widened(const bf16* x, int64_t n) {
    std::vector<float> wide(static_cast<size_t>(n));
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) wide[i] = from_bf16(x[i]);
    return wide;
}

}  // namespace

void attention_forward(float* out, float* lse, const bf16* qkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                       int64_t NKV, const AttentionMask& mask, AttentionMath math) {
#if LMFORGE_ISA_AVX512
    if (math == AttentionMath::Bf16 && attention_has_bf16_math())
        return attention_forward_bf16(out, lse, qkv, B, T, C, NH, NKV, mask);
#endif
    const std::vector<float> wide = widened(qkv, B * T * (C + 2 * NKV * (C / NH)));
    LMFORGE_ISA_NAMESPACE::attention_forward(out, lse, wide.data(), B, T, C, NH, NKV, mask, math);
}

void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse, const bf16* qkv,
                        int64_t B, int64_t T, int64_t C, int64_t NH, int64_t NKV, const AttentionMask& mask,
                        AttentionMath math) {
#if LMFORGE_ISA_AVX512
    if (math == AttentionMath::Bf16 && attention_has_bf16_math())
        return attention_backward_bf16(dqkv, dout, out, lse, qkv, B, T, C, NH, NKV, mask);
#endif
    const std::vector<float> wide_qkv = widened(qkv, B * T * (C + 2 * NKV * (C / NH)));
    LMFORGE_ISA_NAMESPACE::attention_backward(dqkv, dout, out, lse, wide_qkv.data(), B, T, C, NH, NKV, mask, math);
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
