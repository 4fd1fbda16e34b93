#include "kernels/classifier.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

// p (L) = softmax of one row of logits; returns its log-sum-exp.
float softmax_row(float* p, const float* logits, int64_t L) {
    const float max = *std::max_element(logits, logits + L);
    double sum = 0.0;
    for (int64_t j = 0; j < L; j++) sum += std::exp(static_cast<double>(logits[j] - max));
    for (int64_t j = 0; j < L; j++) p[j] = static_cast<float>(std::exp(static_cast<double>(logits[j] - max)) / sum);
    return max + static_cast<float>(std::log(sum));
}

}  // namespace

void classifier_forward(float* logits, float* losses, const float* h, const float* score, const float* bias,
                        const int32_t* labels, int64_t B, int64_t C, int64_t L) {
    std::vector<float> p(L);
    for (int64_t b = 0; b < B; b++) {
        const float* x = h + b * C;
        for (int64_t j = 0; j < L; j++) {
            const float* w = score + j * C;
            float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
            for (int64_t c = 0; c < C; c++) acc += x[c] * w[c];
            logits[b * L + j] = bias != nullptr ? acc + bias[j] : acc;
        }
        if (labels != nullptr) losses[b] = softmax_row(p.data(), logits + b * L, L) - logits[b * L + labels[b]];
    }
}

void classifier_backward(float* dh, float* dscore, float* dbias, bool accumulate, const float* logits,
                         const float* h, const float* score, const int32_t* labels, float dloss, int64_t B, int64_t C,
                         int64_t L) {
    if (!accumulate) std::fill_n(dscore, L * C, 0.0f);
    if (!accumulate && dbias != nullptr) std::fill_n(dbias, L, 0.0f);
    std::vector<float> g(L);
    for (int64_t b = 0; b < B; b++) {
        softmax_row(g.data(), logits + b * L, L);
        g[labels[b]] -= 1.0f;
        float* dx = dh + b * C;
        std::fill_n(dx, C, 0.0f);
        for (int64_t j = 0; j < L; j++) {
            const float gj = g[j] * dloss;
            if (dbias != nullptr) dbias[j] += gj;
            const float* w = score + j * C;
            float* dw = dscore + j * C;
            const float* x = h + b * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) {
                dx[c] += gj * w[c];
                dw[c] += gj * x[c];
            }
        }
    }
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
