// Scalar twin of kernels/cosine_distance.h, from the definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lmforge::kernels::ref {

template <class T_>
void cosine_distance_backward(T_* dh, T_* loss, const T_* h, const T_* t, const int32_t* rows, int64_t M, int64_t C,
                              T_ scale) {
    for (int64_t m = 0; m < M; m++) {
        const T_* hm = h + static_cast<int64_t>(rows[m]) * C;
        const T_* tm = t + m * C;
        T_ hh = 0, tt = 0, ht = 0;
        for (int64_t c = 0; c < C; c++) hh += hm[c] * hm[c], tt += tm[c] * tm[c], ht += hm[c] * tm[c];
        const T_ a = std::max(std::sqrt(hh), T_(1e-8)), b = std::max(std::sqrt(tt), T_(1e-8));
        loss[m] = 1 - ht / (a * b);
        for (int64_t c = 0; c < C; c++) {
            dh[rows[m] * C + c] += scale * (ht / (a * a * a * b) * hm[c] - tm[c] / (a * b));
        }
    }
}

}  // namespace lmforge::kernels::ref
