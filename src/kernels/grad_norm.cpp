#include "kernels/grad_norm.h"

#include <algorithm>

#include "core/bf16.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

template <class T>
double squares(const T* x, int64_t n) {
    // A fixed number of chunks, summed in a fixed order: an OpenMP reduction would combine
    // thread partials in arrival order, and a resumed run must reproduce the norm to the bit.
    constexpr int64_t kChunks = 256;
    double partial[kChunks];
    const int64_t chunk = (n + kChunks - 1) / kChunks;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < kChunks; c++) {
        const int64_t begin = std::min(n, c * chunk), end = std::min(n, begin + chunk);
        double acc = 0.0;
        // Float sums over short runs keep the inner loop vectorised; double across runs.
        for (int64_t r = begin; r < end; r += 4096) {
            const int64_t stop = std::min(end, r + 4096);
            float run = 0.0f;
#pragma omp simd reduction(+ : run)
            for (int64_t i = r; i < stop; i++) run += to_float(x[i]) * to_float(x[i]);
            acc += run;
        }
        partial[c] = acc;
    }
    double total = 0.0;
    for (double p : partial) total += p;
    return total;
}

}  // namespace

double sum_of_squares(const float* x, int64_t n) { return squares(x, n); }
double sum_of_squares(const bf16* x, int64_t n) { return squares(x, n); }

void scale_inplace(float* x, int64_t n, float scale) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) x[i] *= scale;
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
