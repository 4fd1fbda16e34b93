// Scalar twin of kernels/swiglu.h.
#pragma once

#include <cmath>
#include <cstdint>

namespace lmforge::kernels::ref {

// σ(x) and 1 − σ(x) = σ(−x) from e^(−|x|): neither overflows nor cancels, in either tail.
template <class T_>
T_ sigmoid(T_ x) {
    const T_ e = std::exp(-std::abs(x));
    return x < 0 ? e / (T_(1) + e) : T_(1) / (T_(1) + e);
}

template <class T_>
void swiglu_forward(T_* out, const T_* gate_up, int64_t N, int64_t H) {
    for (int64_t n = 0; n < N; n++) {
        for (int64_t h = 0; h < H; h++) {
            const T_ g = gate_up[n * 2 * H + h], u = gate_up[n * 2 * H + H + h];
            out[n * H + h] = g * sigmoid(g) * u;
        }
    }
}

// d gate = dout · up · σ(g)·(1 + g·(1 − σ(g))),  d up = dout · g·σ(g).
template <class T_>
void swiglu_backward(T_* dgate_up, const T_* dout, const T_* gate_up, int64_t N, int64_t H) {
    for (int64_t n = 0; n < N; n++) {
        for (int64_t h = 0; h < H; h++) {
            const T_ g = gate_up[n * 2 * H + h], u = gate_up[n * 2 * H + H + h], d = dout[n * H + h];
            const T_ s = sigmoid(g), one_minus_s = sigmoid(-g);
            dgate_up[n * 2 * H + h] = d * u * (s + g * s * one_minus_s);
            dgate_up[n * 2 * H + H + h] = d * g * s;
        }
    }
}

}  // namespace lmforge::kernels::ref
