#include "kernels/attention_decode.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/fast_math.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

void attention_decode(float* out, const float* q, const float* kcache, const float* vcache, int64_t n,
                      int64_t stride, int64_t C, int64_t NH, int64_t NKV, float* scratch) {
    const int64_t HS = C / NH, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
#pragma omp parallel for schedule(static)
    for (int64_t h = 0; h < NH; h++) {
        const float* qh = q + h * HS;
        float* s = scratch + h * n;
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < n; j++) {
            const float* k = kcache + j * stride + h / group * HS;
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int64_t d = 0; d < HS; d++) dot += qh[d] * k[d];
            s[j] = dot * scale;
            max = std::max(max, s[j]);
        }
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < n; j++) {
            s[j] = fast_exp_nonpositive(s[j] - max);
            sum += s[j];
        }
        float* o = out + h * HS;
        std::fill_n(o, HS, 0.0f);
        for (int64_t j = 0; j < n; j++) {
            const float p = s[j] / sum;
            const float* v = vcache + j * stride + h / group * HS;
#pragma omp simd
            for (int64_t d = 0; d < HS; d++) o[d] += p * v[d];
        }
    }
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
