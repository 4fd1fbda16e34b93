// The reference GEMM: three loops, OpenMP over rows, accumulated in double. Slow on purpose;
// it is the yardstick for the fast backends.
#include "backend/gemm_naive.h"

#include "core/bf16.h"

namespace lmforge::backend {

namespace {

// C = op(A)·op(B) [+ C] [+ bias] for any element type Load turns into float.
template <class T, class Load>
void naive(const GemmShape& s, const T* a, const T* b, float* c, const float* bias, Load load) {
    const int64_t lda = s.stored_lda(), ldb = s.stored_ldb(), ldc = s.stored_ldc();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < s.M; i++) {
        for (int64_t j = 0; j < s.N; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < s.K; k++) {
                const float x = load(s.trans_a ? a[k * lda + i] : a[i * lda + k]);
                const float y = load(s.trans_b ? b[j * ldb + k] : b[k * ldb + j]);
                acc += static_cast<double>(x) * y;
            }
            if (bias != nullptr) acc += bias[j];
            float& out = c[i * ldc + j];
            out = static_cast<float>(s.accumulate ? out + acc : acc);
        }
    }
}

}  // namespace

void NaiveGemm::run(const GemmShape& s, const float* a, const float* b, float* c, const float* bias) {
    naive(s, a, b, c, bias, [](float x) { return x; });
}

void NaiveGemm::run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                         const float* bias) {
    naive(s, a, b, c, bias, [](uint16_t x) { return from_bf16(x); });
}

}  // namespace lmforge::backend
