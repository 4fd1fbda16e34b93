// Scalar twin of kernels/rope.h: the formulas in T_ throughout (in double, theta^(−2i/HS) and
// Llama 3's rule without fp32's intermediate roundings, and the exact angle position · f).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

#include "kernels/rope.h"

namespace lmforge::kernels::ref {

template <class T_>
void rope_inv_freq(T_* inv_freq, int64_t HS, double theta, const Llama3RopeScaling* scaling) {
    const T_ pi = std::numbers::pi_v<T_>;
    for (int64_t i = 0; i < HS / 2; i++) {
        T_ f = T_(1) / std::pow(T_(theta), T_(2 * i) / T_(HS));
        if (scaling != nullptr) {
            const T_ factor = T_(scaling->factor), low = T_(scaling->low_freq_factor),
                     high = T_(scaling->high_freq_factor), original_max = T_(scaling->original_max_position);
            const T_ wavelen = 2 * pi / f;
            if (wavelen > original_max / low) {
                f = f / factor;
            } else if (!(wavelen < original_max / high)) {
                const T_ smooth = (original_max / wavelen - low) / (high - low);
                f = (1 - smooth) * f / factor + smooth * f;
            }
        }
        inv_freq[i] = f;
    }
}

template <class T_>
void rope_tables(T_* cos, T_* sin, const T_* inv_freq, int64_t HS, int64_t pos0, int64_t T) {
    const int64_t h = HS / 2;
    for (int64_t t = 0; t < T; t++) {
        for (int64_t i = 0; i < h; i++) {
            const T_ angle = T_(pos0 + t) * inv_freq[i];
            cos[t * h + i] = std::cos(angle);
            sin[t * h + i] = std::sin(angle);
        }
    }
}

template <class T_>
void rope_forward(T_* x, const T_* cos, const T_* sin, int64_t B, int64_t T, int64_t stride,
                  int64_t heads, int64_t HS) {
    const int64_t h = HS / 2;
    for (int64_t r = 0; r < B * T; r++) {
        const int64_t t = r % T;
        for (int64_t head = 0; head < heads; head++) {
            T_* p = x + r * stride + head * HS;
            for (int64_t i = 0; i < h; i++) {
                const T_ a = p[i], b = p[i + h], c = cos[t * h + i], s = sin[t * h + i];
                p[i] = a * c - b * s;
                p[i + h] = b * c + a * s;
            }
        }
    }
}

template <class T_>
void rope_backward(T_* dx, const T_* cos, const T_* sin, int64_t B, int64_t T, int64_t stride,
                   int64_t heads, int64_t HS) {
    const int64_t h = HS / 2;
    for (int64_t r = 0; r < B * T; r++) {
        const int64_t t = r % T;
        for (int64_t head = 0; head < heads; head++) {
            T_* p = dx + r * stride + head * HS;
            for (int64_t i = 0; i < h; i++) {
                const T_ a = p[i], b = p[i + h], c = cos[t * h + i], s = sin[t * h + i];
                p[i] = a * c + b * s;
                p[i + h] = b * c - a * s;
            }
        }
    }
}

}  // namespace lmforge::kernels::ref
