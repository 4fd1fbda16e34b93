// Scalar twin of the softmax + cross-entropy that kernels/lm_head_loss.h fuses with the LM head.
#pragma once

#include <cmath>
#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
void crossentropy_forward(T_* losses, T_* lse, const T_* logits, const int32_t* targets,
                          int64_t N, int64_t V, int64_t Vp) {
    for (int64_t n = 0; n < N; n++) {
        const T_* row = logits + n * Vp;
        T_ max = row[0];
        for (int64_t v = 1; v < V; v++) max = row[v] > max ? row[v] : max;
        T_ sum = 0;
        for (int64_t v = 0; v < V; v++) sum += std::exp(row[v] - max);
        lse[n] = max + std::log(sum);
        losses[n] = targets[n] == -100 ? T_(0) : lse[n] - row[targets[n]];
    }
}

template <class T_>
void crossentropy_backward(T_* dlogits, const T_* logits, const T_* lse,
                           const int32_t* targets, T_ dloss, int64_t N, int64_t V,
                           int64_t Vp) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t v = 0; v < Vp; v++) {
            T_ g = 0;
            if (targets[n] != -100 && v < V) {
                g = std::exp(logits[n * Vp + v] - lse[n]) - (v == targets[n] ? T_(1) : T_(0));
            }
            dlogits[n * Vp + v] = g * dloss;
        }
}

// The gradients of logits (N, V) = x (N, C) · wᵀ, w (V, C), the shape of every head that
// feeds a cross-entropy: dx = dlogits · w and dw = dlogitsᵀ · x, written (=).
template <class T_>
void head_backward(T_* dx, T_* dw, const T_* dlogits, const T_* x, const T_* w, int64_t N, int64_t C, int64_t V) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            T_ acc = 0;
            for (int64_t v = 0; v < V; v++) acc += dlogits[n * V + v] * w[v * C + c];
            dx[n * C + c] = acc;
        }
    for (int64_t v = 0; v < V; v++)
        for (int64_t c = 0; c < C; c++) {
            T_ acc = 0;
            for (int64_t n = 0; n < N; n++) acc += dlogits[n * V + v] * x[n * C + c];
            dw[v * C + c] = acc;
        }
}

// The bias gradient of such a head, logits + b: db (V) = column sums of dlogits (N, Vp; the
// first V columns), written (=).
template <class T_>
void head_bias_backward(T_* db, const T_* dlogits, int64_t N, int64_t V, int64_t Vp) {
    for (int64_t v = 0; v < V; v++) {
        T_ acc = 0;
        for (int64_t n = 0; n < N; n++) acc += dlogits[n * Vp + v];
        db[v] = acc;
    }
}

}  // namespace lmforge::kernels::ref
