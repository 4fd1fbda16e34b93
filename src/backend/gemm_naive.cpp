// The reference GEMM: three loops, OpenMP over rows, accumulated in double. Slow on purpose;
// it is the yardstick for the fast backends.
#include "backend/gemm_naive.h"

#include <cassert>
#include <type_traits>

#include "core/bf16.h"

namespace lmforge::backend {

namespace {

// C = op(A)·op(B) [+ C] [+ bias] for any element type Load turns into float; C float, or bf16
// (rounded once at the end, never accumulated).
template <class T, class Out, class Load>
void naive(const GemmShape& s, const T* a, const T* b, Out* c, const float* bias, Load load) {
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
            Out& out = c[i * ldc + j];
            if constexpr (std::is_same_v<Out, float>) {
                out = static_cast<float>(s.accumulate ? out + acc : acc);
            } else {
                out = to_bf16(static_cast<float>(acc));
            }
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

void NaiveGemm::run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, uint16_t* c,
                         const float* bias) {
    assert(!s.accumulate && "a bf16 output is never accumulated into");
    naive(s, a, b, c, bias, [](uint16_t x) { return from_bf16(x); });
}

}  // namespace lmforge::backend
