#include "kernels/cosine_distance.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

inline float widen(float x) { return x; }
inline float widen(bf16 x) { return from_bf16(x); }

}  // namespace

template <class In>
void cosine_distance_backward(float* dh, float* loss, const In* h, const float* t, const int32_t* rows, int64_t M,
                              int64_t C, float scale) {
    constexpr float kEps = 1e-8f;
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; m++) {
        const In* hm = h + static_cast<int64_t>(rows[m]) * C;
        const float* tm = t + m * C;
        float hh = 0, tt = 0, ht = 0;
#pragma omp simd reduction(+ : hh, tt, ht)
        for (int64_t c = 0; c < C; c++) {
            const float x = widen(hm[c]);
            hh += x * x;
            tt += tm[c] * tm[c];
            ht += x * tm[c];
        }
        const float a = std::max(std::sqrt(hh), kEps), b = std::max(std::sqrt(tt), kEps);
        const float cosine = ht / (a * b);
        loss[m] = 1.0f - cosine;
        // ∂(1 − cos)/∂h = cos · h / a² − t / (a b)
        const float along_h = scale * cosine / (a * a), along_t = scale / (a * b);
        float* d = dh + static_cast<int64_t>(rows[m]) * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) d[c] += along_h * widen(hm[c]) - along_t * tm[c];
    }
}

template void cosine_distance_backward<float>(float*, float*, const float*, const float*, const int32_t*, int64_t,
                                              int64_t, float);
template void cosine_distance_backward<bf16>(float*, float*, const bf16*, const float*, const int32_t*, int64_t,
                                             int64_t, float);

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
