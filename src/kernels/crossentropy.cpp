#include "kernels/crossentropy.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/fast_math.h"

namespace lmforge::kernels {

void crossentropy_forward(float* losses, float* lse, const float* logits,
                          const int32_t* targets, int64_t N, int64_t V, int64_t Vp) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const float* row = logits + n * Vp;
        float max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max)
        for (int64_t v = 0; v < V; v++) max = row[v] > max ? row[v] : max;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t v = 0; v < V; v++) sum += fast_exp(row[v] - max);
        lse[n] = max + std::log(sum);
        const int32_t t = targets[n];
        losses[n] = t == kIgnoreIndex ? 0.0f : lse[n] - row[t];
    }
}

void crossentropy_backward(float* dlogits, const float* logits, const float* lse,
                           const int32_t* targets, float dloss, int64_t N, int64_t V,
                           int64_t Vp) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const float* row = logits + n * Vp;
        float* drow = dlogits + n * Vp;
        const int32_t t = targets[n];
        if (t == kIgnoreIndex) {
            std::memset(drow, 0, sizeof(float) * Vp);
            continue;
        }
        const float m = lse[n];
#pragma omp simd
        for (int64_t v = 0; v < V; v++) drow[v] = fast_exp(row[v] - m) * dloss;
        drow[t] -= dloss;
        for (int64_t v = V; v < Vp; v++) drow[v] = 0.0f;
    }
}

}  // namespace lmforge::kernels
