// Scalar twin of kernels/linear.h (weight stored (OC, C), torch.nn.Linear layout).
#pragma once

#include <algorithm>
#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
void linear_forward(T_* out, const T_* inp, const T_* weight, const T_* bias, int64_t N,
                    int64_t C, int64_t OC) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < OC; o++) {
            T_ acc = bias != nullptr ? bias[o] : T_(0);
            for (int64_t c = 0; c < C; c++) acc += inp[n * C + c] * weight[o * C + c];
            out[n * OC + o] = acc;
        }
}

// dinp written (=), as the kernel; dweight and dbias accumulated (+=). dinp, dbias may be null.
template <class T_>
void linear_backward(T_* dinp, T_* dweight, T_* dbias, const T_* dout, const T_* inp,
                     const T_* weight, int64_t N, int64_t C, int64_t OC) {
    if (dinp != nullptr) std::fill_n(dinp, N * C, T_(0));
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < OC; o++) {
            const T_ d = dout[n * OC + o];
            for (int64_t c = 0; c < C; c++) {
                if (dinp != nullptr) dinp[n * C + c] += d * weight[o * C + c];
                dweight[o * C + c] += d * inp[n * C + c];
            }
            if (dbias != nullptr) dbias[o] += d;
        }
}

}  // namespace lmforge::kernels::ref
