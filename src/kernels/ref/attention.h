// Scalar twin of kernels/attention.h: the textbook form, a full softmax per row and the
// softmax Jacobian written out (rowsum(P ∘ dP)), not the rowsum(dO ∘ O) shortcut of the
// optimised kernel — so the two are independent derivations.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/attention.h"

namespace lmforge::kernels::ref {

// Query i of sequence b sees keys 0..visible_end-1.
inline int64_t visible_end(const AttentionMask& mask, int64_t b, int64_t i, int64_t T) {
    const int64_t kl = mask.key_len != nullptr ? mask.key_len[b] : T;
    return mask.causal ? std::min(i + 1, kl) : kl;
}

template <class T_>
void attention_forward(T_* out, T_* lse, const T_* qkv, int64_t B, int64_t T, int64_t C,
                       int64_t NH, int64_t NKV, const AttentionMask& mask = {}) {
    const int64_t HS = C / NH, KVC = NKV * HS, C3 = C + 2 * KVC, group = NH / NKV;
    const T_ scale = T_(1) / std::sqrt(T_(HS));
    std::vector<T_> s(T);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++)
            for (int64_t i = 0; i < T; i++) {
                const int64_t end = visible_end(mask, b, i, T);
                const T_* q = qkv + (b * T + i) * C3 + h * HS;
                T_ max = -1e30;
                for (int64_t j = 0; j < end; j++) {
                    const T_* k = qkv + (b * T + j) * C3 + C + h / group * HS;
                    T_ acc = 0;
                    for (int64_t d = 0; d < HS; d++) acc += q[d] * k[d];
                    s[j] = acc * scale;
                    max = s[j] > max ? s[j] : max;
                }
                T_ sum = 0;
                for (int64_t j = 0; j < end; j++) sum += std::exp(s[j] - max);
                T_* o = out + (b * T + i) * C + h * HS;
                for (int64_t d = 0; d < HS; d++) o[d] = 0;
                for (int64_t j = 0; j < end; j++) {
                    const T_ p = std::exp(s[j] - max) / sum;
                    const T_* v = qkv + (b * T + j) * C3 + C + KVC + h / group * HS;
                    for (int64_t d = 0; d < HS; d++) o[d] += p * v[d];
                }
                lse[(b * NH + h) * T + i] = max + std::log(sum);
            }
}

template <class T_>
void attention_backward(T_* dqkv, const T_* dout, const T_* /*out*/, const T_* lse,
                        const T_* qkv, int64_t B, int64_t T, int64_t C, int64_t NH, int64_t NKV,
                        const AttentionMask& mask = {}) {
    const int64_t HS = C / NH, KVC = NKV * HS, C3 = C + 2 * KVC, group = NH / NKV;
    const T_ scale = T_(1) / std::sqrt(T_(HS));
    std::vector<T_> p(T), dp(T);
    std::fill_n(dqkv, B * T * C3, T_(0));  // writes (=), as the kernel
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++)
            for (int64_t i = 0; i < T; i++) {
                const int64_t end = visible_end(mask, b, i, T);
                const T_* q = qkv + (b * T + i) * C3 + h * HS;
                const T_* dO = dout + (b * T + i) * C + h * HS;
                T_ pdp = 0;
                for (int64_t j = 0; j < end; j++) {
                    const T_* k = qkv + (b * T + j) * C3 + C + h / group * HS;
                    const T_* v = k + KVC;
                    T_ s = 0, d = 0;
                    for (int64_t e = 0; e < HS; e++) {
                        s += q[e] * k[e];
                        d += dO[e] * v[e];
                    }
                    p[j] = std::exp(s * scale - lse[(b * NH + h) * T + i]);
                    dp[j] = d;
                    pdp += p[j] * d;
                }
                for (int64_t j = 0; j < end; j++) {
                    const T_ ds = p[j] * (dp[j] - pdp);
                    const T_* k = qkv + (b * T + j) * C3 + C + h / group * HS;
                    T_* dq = dqkv + (b * T + i) * C3 + h * HS;
                    T_* dk = dqkv + (b * T + j) * C3 + C + h / group * HS;
                    T_* dv = dk + KVC;
                    for (int64_t e = 0; e < HS; e++) {
                        dq[e] += scale * ds * k[e];
                        dk[e] += scale * ds * q[e];
                        dv[e] += p[j] * dO[e];
                    }
                }
            }
}

}  // namespace lmforge::kernels::ref
