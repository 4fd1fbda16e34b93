// Work splits over (batch, head) — and over query tiles in forward — so each thread owns
// whole rows of its outputs. Within a (query tile, key tile) pair:
//  - K (and V) are transposed into a small buffer, so that one query row's scores against
//    64 keys are a vectorised loop over the keys;
//  - the products that sum over keys or queries (P·V, dS·K, dSᵀ·Q, Pᵀ·dO) accumulate one
//    output row of HS floats in registers and store it once per tile.
// The kernels are templates on the head size: HS = 64 (every GPT-2 size) is compiled with a
// fixed HS so its rows live in registers; other sizes take the same code with HS at run time.
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/fast_math.h"

namespace lmforge::kernels {

namespace {

constexpr int64_t kBlockQ = 32;  // query rows per tile
constexpr int64_t kBlockK = 64;  // keys per tile: the width of a row of scores

// dst (HS, kBlockK) = the nk rows at `src` (row stride C3, HS wide), transposed; columns
// past nk are zero.
void transpose_tile(float* dst, const float* src, int64_t nk, int64_t HS, int64_t C3) {
    for (int64_t d = 0; d < HS; d++) {
        float* row = dst + d * kBlockK;
        for (int64_t j = 0; j < nk; j++) row[j] = src[j * C3 + d];
        for (int64_t j = nk; j < kBlockK; j++) row[j] = 0.0f;
    }
}

// s (kBlockK) = a (HS) · tile (HS, kBlockK): one row against a transposed tile.
inline void row_times_tile(float* s, const float* a, const float* tile, int64_t HS) {
    alignas(64) float acc[kBlockK] = {};
    for (int64_t d = 0; d < HS; d++) {
        const float ad = a[d];
        const float* t = tile + d * kBlockK;
#pragma omp simd
        for (int64_t j = 0; j < kBlockK; j++) acc[j] += ad * t[j];
    }
#pragma omp simd
    for (int64_t j = 0; j < kBlockK; j++) s[j] = acc[j];
}

// y (HS) += Σ_k w[k·w_stride] · x_k for k < n, where x_k = x + k·x_stride (rows of HS):
// the row y stays in registers for the whole sum when HS is a compile-time constant.
template <int64_t kHS>
inline void add_weighted_rows(float* y, const float* w, int64_t w_stride, const float* x,
                              int64_t x_stride, int64_t n, int64_t hs_runtime) {
    const int64_t HS = kHS > 0 ? kHS : hs_runtime;
    alignas(64) float acc[kHS > 0 ? kHS : kAttentionMaxHeadSize];
#pragma omp simd
    for (int64_t d = 0; d < HS; d++) acc[d] = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        const float wk = w[k * w_stride];
        const float* xk = x + k * x_stride;
#pragma omp simd
        for (int64_t d = 0; d < HS; d++) acc[d] += wk * xk[d];
    }
#pragma omp simd
    for (int64_t d = 0; d < HS; d++) y[d] += acc[d];
}

template <int64_t kHS>
void forward_impl(float* out, float* lse, const float* qkv, int64_t B, int64_t T, int64_t C,
                  int64_t NH) {
    const int64_t HS = kHS > 0 ? kHS : C / NH, C3 = 3 * C;
    const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
    const int64_t num_qblocks = (T + kBlockQ - 1) / kBlockQ;

#pragma omp parallel for collapse(3) schedule(dynamic)
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < NH; h++) {
            for (int64_t qb = 0; qb < num_qblocks; qb++) {
                const int64_t i0 = qb * kBlockQ, i1 = std::min(T, i0 + kBlockQ);
                const float* base = qkv + b * T * C3 + h * HS;  // q of row 0; k at +C, v at +2C
                alignas(64) float kt[kAttentionMaxHeadSize * kBlockK];
                alignas(64) float s[kBlockK];
                float row_max[kBlockQ], row_sum[kBlockQ];
                for (int64_t i = i0; i < i1; i++) {
                    row_max[i - i0] = -std::numeric_limits<float>::infinity();
                    row_sum[i - i0] = 0.0f;
                    std::fill_n(out + (b * T + i) * C + h * HS, HS, 0.0f);
                }
                // Keys after the tile's last row are masked for all of its rows.
                for (int64_t j0 = 0; j0 < i1; j0 += kBlockK) {
                    const int64_t nk = std::min(i1, j0 + kBlockK) - j0;
                    transpose_tile(kt, base + j0 * C3 + C, nk, HS, C3);
                    for (int64_t i = std::max(i0, j0); i < i1; i++) {
                        const int64_t nvalid = std::min(nk, i + 1 - j0);  // causal: keys <= i
                        row_times_tile(s, base + i * C3, kt, HS);
                        float block_max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : block_max)
                        for (int64_t j = 0; j < nvalid; j++) {
                            s[j] *= scale;
                            block_max = std::max(block_max, s[j]);
                        }
                        // Online softmax: rescale what was summed under the old maximum.
                        const float m_new = std::max(row_max[i - i0], block_max);
                        const float correction = fast_exp(row_max[i - i0] - m_new);
                        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                        for (int64_t j = 0; j < nvalid; j++) {
                            s[j] = fast_exp(s[j] - m_new);
                            sum += s[j];
                        }
                        row_sum[i - i0] = row_sum[i - i0] * correction + sum;
                        row_max[i - i0] = m_new;
                        float* o = out + (b * T + i) * C + h * HS;
#pragma omp simd
                        for (int64_t d = 0; d < HS; d++) o[d] *= correction;
                        add_weighted_rows<kHS>(o, s, 1, base + j0 * C3 + 2 * C, C3, nvalid, HS);
                    }
                }
                for (int64_t i = i0; i < i1; i++) {
                    float* o = out + (b * T + i) * C + h * HS;
                    const float inv = 1.0f / row_sum[i - i0];
#pragma omp simd
                    for (int64_t d = 0; d < HS; d++) o[d] *= inv;
                    lse[(b * NH + h) * T + i] = row_max[i - i0] + std::log(row_sum[i - i0]);
                }
            }
        }
    }
}

template <int64_t kHS>
void backward_impl(float* dqkv, const float* dout, const float* out, const float* lse,
                   const float* qkv, int64_t B, int64_t T, int64_t C, int64_t NH) {
    const int64_t HS = kHS > 0 ? kHS : C / NH, C3 = 3 * C;
    const float scale = 1.0f / std::sqrt(static_cast<float>(HS));

    // With P = softmax(S) recomputed from lse and dP = dO·Vᵀ:  dS = P ∘ (dP − rowsum(dO ∘ O)),
    // dQ = scale·dS·K,  dK = scale·dSᵀ·Q,  dV = Pᵀ·dO.
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < NH; h++) {
            const float* base = qkv + b * T * C3 + h * HS;
            float* dbase = dqkv + b * T * C3 + h * HS;
            const float* dO_base = dout + b * T * C + h * HS;
            const float* row_lse = lse + (b * NH + h) * T;
            alignas(64) float kt[kAttentionMaxHeadSize * kBlockK];
            alignas(64) float vt[kAttentionMaxHeadSize * kBlockK];
            alignas(64) float p[kBlockQ * kBlockK], ds[kBlockQ * kBlockK];  // (query, key)
            for (int64_t i0 = 0; i0 < T; i0 += kBlockQ) {
                const int64_t i1 = std::min(T, i0 + kBlockQ), nq = i1 - i0;
                float rowdot[kBlockQ];  // rowsum(dO ∘ O) of each query row
                for (int64_t i = i0; i < i1; i++) {
                    const float* dO = dO_base + i * C;
                    const float* o = out + (b * T + i) * C + h * HS;
                    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                    for (int64_t d = 0; d < HS; d++) sum += dO[d] * o[d];
                    rowdot[i - i0] = sum;
                }
                for (int64_t j0 = 0; j0 < i1; j0 += kBlockK) {
                    const int64_t nk = std::min(i1, j0 + kBlockK) - j0;
                    transpose_tile(kt, base + j0 * C3 + C, nk, HS, C3);
                    transpose_tile(vt, base + j0 * C3 + 2 * C, nk, HS, C3);
                    // P and dS for the whole tile; rows above the key tile and masked entries
                    // are zero, so the products below may run over whole rows and columns.
                    for (int64_t i = i0; i < i1; i++) {
                        float* pi = p + (i - i0) * kBlockK;
                        float* dsi = ds + (i - i0) * kBlockK;
                        const int64_t nvalid = std::clamp<int64_t>(i + 1 - j0, 0, nk);
                        row_times_tile(pi, base + i * C3, kt, HS);
                        row_times_tile(dsi, dO_base + i * C, vt, HS);  // dP
                        const float m = row_lse[i], D = rowdot[i - i0];
#pragma omp simd
                        for (int64_t j = 0; j < kBlockK; j++) {
                            const float pij = j < nvalid ? fast_exp(pi[j] * scale - m) : 0.0f;
                            pi[j] = pij;
                            dsi[j] = pij * (dsi[j] - D) * scale;
                        }
                    }
                    const int64_t first = std::max(i0, j0);  // rows before it see none of the keys
                    for (int64_t i = first; i < i1; i++) {   // dQ_i += Σ_j dS_ij K_j
                        add_weighted_rows<kHS>(dbase + i * C3, ds + (i - i0) * kBlockK, 1,
                                               base + j0 * C3 + C, C3, nk, HS);
                    }
                    for (int64_t j = 0; j < nk; j++) {
                        // Query rows before key j0+j have zero weight for it: start there.
                        const int64_t from = std::max(first, j0 + j) - i0;
                        const float* dsj = ds + from * kBlockK + j;
                        const float* pj = p + from * kBlockK + j;
                        float* drow = dbase + (j0 + j) * C3;
                        add_weighted_rows<kHS>(drow + C, dsj, kBlockK, base + (i0 + from) * C3,
                                               C3, nq - from, HS);  // dK_j += Σ_i dS_ij Q_i
                        add_weighted_rows<kHS>(drow + 2 * C, pj, kBlockK, dO_base + (i0 + from) * C,
                                               C, nq - from, HS);  // dV_j += Σ_i P_ij dO_i
                    }
                }
            }
        }
    }
}

}  // namespace

void attention_forward(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                       int64_t C, int64_t NH) {
    if (C / NH == 64) {
        forward_impl<64>(out, lse, qkv, B, T, C, NH);
    } else {
        forward_impl<0>(out, lse, qkv, B, T, C, NH);
    }
}

void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int64_t B, int64_t T, int64_t C, int64_t NH) {
    if (C / NH == 64) {
        backward_impl<64>(dqkv, dout, out, lse, qkv, B, T, C, NH);
    } else {
        backward_impl<0>(dqkv, dout, out, lse, qkv, B, T, C, NH);
    }
}

}  // namespace lmforge::kernels
