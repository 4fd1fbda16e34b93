// Scalar twin of kernels/encoder.h, templated on the element type (double for gradient checks).
#pragma once

#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
void encoder_forward(T_* out, const int32_t* inp, const T_* wte, const T_* wpe, int64_t B,
                     int64_t T, int64_t C) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t c = 0; c < C; c++)
                out[(b * T + t) * C + c] = wte[inp[b * T + t] * C + c] + wpe[t * C + c];
}

template <class T_>
void encoder_backward(T_* dwte, T_* dwpe, const T_* dout, const int32_t* inp, int64_t B,
                      int64_t T, int64_t C) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t c = 0; c < C; c++) {
                dwte[inp[b * T + t] * C + c] += dout[(b * T + t) * C + c];
                dwpe[t * C + c] += dout[(b * T + t) * C + c];
            }
}

template <class T_>
void token_embedding_forward(T_* out, const int32_t* inp, const T_* wte, int64_t N, int64_t C) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) out[n * C + c] = wte[inp[n] * C + c];
}

template <class T_>
void token_embedding_backward(T_* dwte, const T_* dout, const int32_t* inp, int64_t N, int64_t C) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) dwte[inp[n] * C + c] += dout[n * C + c];
}

}  // namespace lmforge::kernels::ref
