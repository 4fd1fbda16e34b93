// Scalar twin of kernels/lm_head_loss.h, unfused: the full (N, Vp) logits, the textbook
// softmax + cross-entropy (ref/crossentropy.h), then the gradient products and column sums.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ref/crossentropy.h"

namespace lmforge::kernels::ref {

// x (N, C), wte (Vp, C), bias (V) or null. losses, lse (N); dx (N, C), dwte (Vp, C) and
// dbias (V, if not null) written (=) for loss = dloss · Σ losses.
template <class T_>
void lm_head_loss(T_* losses, T_* lse, T_* dx, T_* dwte, T_* dbias, const T_* x, const T_* wte, const T_* bias,
                  const int32_t* targets, T_ dloss, int64_t N, int64_t C, int64_t V, int64_t Vp) {
    std::vector<T_> logits(N * Vp), dlogits(N * Vp);
    for (int64_t n = 0; n < N; n++)
        for (int64_t v = 0; v < Vp; v++) {
            T_ acc = bias != nullptr && v < V ? bias[v] : T_(0);
            for (int64_t c = 0; c < C; c++) acc += x[n * C + c] * wte[v * C + c];
            logits[n * Vp + v] = acc;
        }
    crossentropy_forward(losses, lse, logits.data(), targets, N, V, Vp);
    crossentropy_backward(dlogits.data(), logits.data(), lse, targets, dloss, N, V, Vp);
    head_backward(dx, dwte, dlogits.data(), x, wte, N, C, Vp);
    if (dbias != nullptr) head_bias_backward(dbias, dlogits.data(), N, V, Vp);
}

}  // namespace lmforge::kernels::ref
