#include "kernels/crossentropy.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/bf16.h"
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

namespace {

template <class Out, class Convert>
void backward(Out* dlogits, const float* logits, const float* lse, const int32_t* targets, float dloss,
              int64_t N, int64_t V, int64_t Vp, Convert convert) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const float* row = logits + n * Vp;
        Out* drow = dlogits + n * Vp;
        const int32_t t = targets[n];
        if (t == kIgnoreIndex) {
            std::memset(static_cast<void*>(drow), 0, sizeof(Out) * Vp);
            continue;
        }
        const float m = lse[n];
        const float at_target = (fast_exp(row[t] - m) - 1.0f) * dloss;  // before row[t] is overwritten
#pragma omp simd
        for (int64_t v = 0; v < V; v++) drow[v] = convert(fast_exp(row[v] - m) * dloss);
        drow[t] = convert(at_target);
        for (int64_t v = V; v < Vp; v++) drow[v] = convert(0.0f);
    }
}

}  // namespace

void crossentropy_backward(float* dlogits, const float* logits, const float* lse,
                           const int32_t* targets, float dloss, int64_t N, int64_t V,
                           int64_t Vp) {
    backward(dlogits, logits, lse, targets, dloss, N, V, Vp, [](float x) { return x; });
}

void crossentropy_backward_bf16(uint16_t* dlogits, const float* logits, const float* lse,
                                const int32_t* targets, float dloss, int64_t N, int64_t V,
                                int64_t Vp) {
    backward(dlogits, logits, lse, targets, dloss, N, V, Vp, [](float x) { return lmforge::to_bf16(x); });
}

}  // namespace lmforge::kernels
