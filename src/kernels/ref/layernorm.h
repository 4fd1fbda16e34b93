// Scalar twin of kernels/layernorm.h (eps defaults to GPT-2's, as the kernel's).
#pragma once

#include <cmath>
#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
void layernorm_forward(T_* out, T_* mean, T_* rstd, const T_* inp, const T_* weight,
                       const T_* bias, int64_t N, int64_t C, T_ eps = T_(1e-5)) {
    for (int64_t n = 0; n < N; n++) {
        const T_* x = inp + n * C;
        T_ m = 0;
        for (int64_t c = 0; c < C; c++) m += x[c];
        m /= C;
        T_ var = 0;
        for (int64_t c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        var /= C;
        const T_ s = T_(1) / std::sqrt(var + eps);
        for (int64_t c = 0; c < C; c++) out[n * C + c] = (x[c] - m) * s * weight[c] + bias[c];
        mean[n] = m;
        rstd[n] = s;
    }
}

template <class T_>
void layernorm_backward(T_* dinp, T_* dweight, T_* dbias, const T_* dout, const T_* inp,
                        const T_* weight, const T_* mean, const T_* rstd, int64_t N,
                        int64_t C) {
    for (int64_t n = 0; n < N; n++) {
        const T_* x = inp + n * C;
        const T_* d = dout + n * C;
        T_ a = 0, b = 0;
        for (int64_t c = 0; c < C; c++) {
            const T_ xhat = (x[c] - mean[n]) * rstd[n];
            a += d[c] * weight[c];
            b += d[c] * weight[c] * xhat;
        }
        a /= C;
        b /= C;
        for (int64_t c = 0; c < C; c++) {
            const T_ xhat = (x[c] - mean[n]) * rstd[n];
            dinp[n * C + c] += rstd[n] * (d[c] * weight[c] - a - xhat * b);
            dweight[c] += d[c] * xhat;
            dbias[c] += d[c];
        }
    }
}

}  // namespace lmforge::kernels::ref
