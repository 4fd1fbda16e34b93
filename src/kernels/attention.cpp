// Work splits over (batch, head) — and over query blocks in forward — so each thread owns
// whole rows of its outputs. Inner loops run over the head size HS, the contiguous axis.
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lmforge::kernels {

namespace {

constexpr int64_t kBlockQ = 32;  // query rows per tile
constexpr int64_t kBlockK = 64;  // keys per tile: 64 keys + 64 values of HS 64 stay in L1

inline float dot(const float* a, const float* b, int64_t n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

inline void axpy(float* y, float alpha, const float* x, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) y[i] += alpha * x[i];
}

}  // namespace

void attention_forward(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                       int64_t C, int64_t NH) {
    const int64_t HS = C / NH, C3 = 3 * C;
    const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
    const int64_t num_qblocks = (T + kBlockQ - 1) / kBlockQ;

#pragma omp parallel for collapse(3) schedule(dynamic)
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < NH; h++) {
            for (int64_t qb = 0; qb < num_qblocks; qb++) {
                const int64_t i0 = qb * kBlockQ, i1 = std::min(T, i0 + kBlockQ);
                const float* base = qkv + b * T * C3 + h * HS;  // q of row 0; k at +C, v at +2C
                float row_max[kBlockQ], row_sum[kBlockQ], p[kBlockK];
                for (int64_t i = i0; i < i1; i++) {
                    row_max[i - i0] = -std::numeric_limits<float>::infinity();
                    row_sum[i - i0] = 0.0f;
                    std::fill_n(out + (b * T + i) * C + h * HS, HS, 0.0f);
                }
                // Keys beyond the block's last row are masked for every row in it.
                for (int64_t j0 = 0; j0 < i1; j0 += kBlockK) {
                    const int64_t j1 = std::min(i1, j0 + kBlockK);
                    for (int64_t i = std::max(i0, j0); i < i1; i++) {
                        const int64_t jend = std::min(j1, i + 1);  // causal: keys <= i
                        const float* q = base + i * C3;
                        float block_max = -std::numeric_limits<float>::infinity();
                        for (int64_t j = j0; j < jend; j++) {
                            p[j - j0] = scale * dot(q, base + j * C3 + C, HS);
                            block_max = std::max(block_max, p[j - j0]);
                        }
                        // Online softmax: rescale what was summed under the old maximum.
                        const float m_old = row_max[i - i0];
                        const float m_new = std::max(m_old, block_max);
                        const float correction = std::exp(m_old - m_new);
                        float* o = out + (b * T + i) * C + h * HS;
                        float sum = 0.0f;
                        for (int64_t d = 0; d < HS; d++) o[d] *= correction;
                        for (int64_t j = j0; j < jend; j++) {
                            const float pj = std::exp(p[j - j0] - m_new);
                            sum += pj;
                            axpy(o, pj, base + j * C3 + 2 * C, HS);
                        }
                        row_sum[i - i0] = row_sum[i - i0] * correction + sum;
                        row_max[i - i0] = m_new;
                    }
                }
                for (int64_t i = i0; i < i1; i++) {
                    float* o = out + (b * T + i) * C + h * HS;
                    const float inv = 1.0f / row_sum[i - i0];
                    for (int64_t d = 0; d < HS; d++) o[d] *= inv;
                    lse[(b * NH + h) * T + i] = row_max[i - i0] + std::log(row_sum[i - i0]);
                }
            }
        }
    }
}

void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int64_t B, int64_t T, int64_t C, int64_t NH) {
    const int64_t HS = C / NH, C3 = 3 * C;
    const float scale = 1.0f / std::sqrt(static_cast<float>(HS));

    // With P = softmax(S) and dP = dO·Vᵀ:  dS = P ∘ (dP − rowsum(dO ∘ O)),
    // dQ = scale·dS·K,  dK = scale·dSᵀ·Q,  dV = Pᵀ·dO.
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < NH; h++) {
            const float* base = qkv + b * T * C3 + h * HS;
            float* dbase = dqkv + b * T * C3 + h * HS;
            const float* row_lse = lse + (b * NH + h) * T;
            for (int64_t i0 = 0; i0 < T; i0 += kBlockQ) {
                const int64_t i1 = std::min(T, i0 + kBlockQ);
                float rowdot[kBlockQ];  // rowsum(dO ∘ O) of each query row
                for (int64_t i = i0; i < i1; i++) {
                    rowdot[i - i0] =
                        dot(dout + (b * T + i) * C + h * HS, out + (b * T + i) * C + h * HS, HS);
                }
                for (int64_t j0 = 0; j0 < i1; j0 += kBlockK) {
                    const int64_t j1 = std::min(i1, j0 + kBlockK);
                    for (int64_t i = std::max(i0, j0); i < i1; i++) {
                        const int64_t jend = std::min(j1, i + 1);
                        const float* q = base + i * C3;
                        const float* dO = dout + (b * T + i) * C + h * HS;
                        float* dq = dbase + i * C3;
                        for (int64_t j = j0; j < jend; j++) {
                            const float* k = base + j * C3 + C;
                            const float* v = base + j * C3 + 2 * C;
                            const float pij = std::exp(scale * dot(q, k, HS) - row_lse[i]);
                            const float dsij = pij * (dot(dO, v, HS) - rowdot[i - i0]);
                            axpy(dbase + j * C3 + 2 * C, pij, dO, HS);    // dV_j
                            axpy(dq, scale * dsij, k, HS);                // dQ_i
                            axpy(dbase + j * C3 + C, scale * dsij, q, HS);  // dK_j
                        }
                    }
                }
            }
        }
    }
}

}  // namespace lmforge::kernels
