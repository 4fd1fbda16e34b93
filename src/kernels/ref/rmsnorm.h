// Scalar twin of kernels/rmsnorm.h.
#pragma once

#include <cmath>
#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
void rmsnorm_forward(T_* out, T_* rstd, const T_* inp, const T_* weight, int64_t N, int64_t C,
                     T_ eps) {
    for (int64_t n = 0; n < N; n++) {
        const T_* x = inp + n * C;
        T_ ms = 0;
        for (int64_t c = 0; c < C; c++) ms += x[c] * x[c];
        ms /= C;
        const T_ s = T_(1) / std::sqrt(ms + eps);
        for (int64_t c = 0; c < C; c++) out[n * C + c] = weight[c] * (x[c] * s);
        rstd[n] = s;
    }
}

template <class T_>
void rmsnorm_backward(T_* dinp, T_* dweight, const T_* dout, const T_* inp, const T_* weight,
                      const T_* rstd, int64_t N, int64_t C) {
    for (int64_t n = 0; n < N; n++) {
        const T_* x = inp + n * C;
        const T_* d = dout + n * C;
        const T_ s = rstd[n];
        T_ m = 0;
        for (int64_t c = 0; c < C; c++) m += d[c] * weight[c] * x[c] * s;
        m /= C;
        for (int64_t c = 0; c < C; c++) {
            const T_ xhat = x[c] * s;
            dinp[n * C + c] += s * (d[c] * weight[c] - xhat * m);
            dweight[c] += d[c] * xhat;
        }
    }
}

}  // namespace lmforge::kernels::ref
