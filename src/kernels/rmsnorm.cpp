// Rows are independent and go to threads whole. The weight gradient sums over rows, so
// backward makes a second pass in which each thread owns a slice of the channels, as
// layernorm_backward does: no per-thread scratch, and sums in an order that does not depend on
// the thread count.
#include "kernels/rmsnorm.h"

#include <omp.h>

#include <cmath>

#include "backend/threads.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

// With b null: RMSNorm of a. Otherwise res = a + b first, and the RMSNorm of res.
template <class Out>
void forward_rows(float* res, Out* out, float* rstd, const float* a, const float* b,
                  const float* weight, int64_t N, int64_t C, float eps) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const float* x = a + n * C;
        if (b != nullptr) {
            float* r = res + n * C;
            const float* y = b + n * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) r[c] = x[c] + y[c];
            x = r;
        }
        // Squares are never negative: the sum cannot cancel (unlike layernorm's variance, no
        // mean is subtracted first), and the simd lanes' partial sums keep rounding small.
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t c = 0; c < C; c++) sum += x[c] * x[c];
        const float s = 1.0f / std::sqrt(sum / C + eps);
        Out* o = out + n * C;
        // weight · (x · rstd), in LlamaRMSNorm's order: the same roundings as transformers.
#pragma omp simd
        for (int64_t c = 0; c < C; c++) o[c] = float_to<Out>(weight[c] * (x[c] * s));
        rstd[n] = s;
    }
}

}  // namespace

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps) {
    forward_rows<float>(nullptr, out, rstd, inp, nullptr, weight, N, C, eps);
}

void rmsnorm_forward(bf16* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps) {
    forward_rows<bf16>(nullptr, out, rstd, inp, nullptr, weight, N, C, eps);
}

void residual_rmsnorm_forward(float* res, float* out, float* rstd, const float* a, const float* b,
                              const float* weight, int64_t N, int64_t C, float eps) {
    forward_rows<float>(res, out, rstd, a, b, weight, N, C, eps);
}

void residual_rmsnorm_forward(float* res, bf16* out, float* rstd, const float* a, const float* b,
                              const float* weight, int64_t N, int64_t C, float eps) {
    forward_rows<bf16>(res, out, rstd, a, b, weight, N, C, eps);
}

namespace {

void backward(float* dinp, bf16* dinp_h, float* dweight, const float* dout, const float* inp, const float* weight,
              const float* rstd, int64_t N, int64_t C) {
    // x̂ = x·r, g = dout ⊙ w:  dx = r·(g − x̂·mean(g ⊙ x̂)),  dw += Σ_rows dout ⊙ x̂.
    // Derivation: docs/derivations/rmsnorm_backward.md.
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            const float* x = inp + n * C;
            const float* d = dout + n * C;
            const float s = rstd[n];
            float sum_g_xhat = 0.0f;
#pragma omp simd reduction(+ : sum_g_xhat)
            for (int64_t c = 0; c < C; c++) sum_g_xhat += d[c] * weight[c] * (x[c] * s);
            const float m = sum_g_xhat / C;
            float* dx = dinp + n * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) dx[c] += s * (d[c] * weight[c] - (x[c] * s) * m);
            if (dinp_h == nullptr) continue;
            bf16* h = dinp_h + n * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) h[c] = lmforge::to_bf16(dx[c]);
        }
        // Not a structured binding: clang cannot capture one in the `omp simd` loop below.
        const backend::Range slice =
            backend::thread_slice(C, omp_get_thread_num(), omp_get_num_threads());
        const long c0 = slice.begin, c1 = dweight != nullptr ? slice.end : slice.begin;
        for (int64_t n = 0; n < N && c0 < c1; n++) {
            const float* x = inp + n * C;
            const float* d = dout + n * C;
            const float s = rstd[n];
#pragma omp simd
            for (int64_t c = c0; c < c1; c++) dweight[c] += d[c] * (x[c] * s);
        }
    }
}

}  // namespace

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int64_t N, int64_t C) {
    backward(dinp, nullptr, dweight, dout, inp, weight, rstd, N, C);
}

void rmsnorm_backward(float* dinp, bf16* dinp_h, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C) {
    backward(dinp, dinp_h, dweight, dout, inp, weight, rstd, N, C);
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
