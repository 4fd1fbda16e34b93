#include "kernels/soft_targets.h"

#include <cmath>
#include <limits>

#include "kernels/fast_math.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

void teacher_log_probs(float* logp, const float* logits, const int32_t* rows, int64_t M, int64_t V, int64_t stride,
                       float temperature) {
    const float inv_t = 1.0f / temperature;
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; m++) {
        const float* z = logits + static_cast<int64_t>(rows[m]) * stride;
        float* out = logp + m * V;
        float top = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : top)
        for (int64_t j = 0; j < V; j++) top = z[j] > top ? z[j] : top;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < V; j++) sum += fast_exp((z[j] - top) * inv_t);
        const float shift = top * inv_t + std::log(sum);
#pragma omp simd
        for (int64_t j = 0; j < V; j++) out[j] = z[j] * inv_t - shift;
    }
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
