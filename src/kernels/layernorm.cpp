// Rows are independent and go to threads whole. The parameter gradients sum over rows, so
// backward makes a second pass in which each thread owns a slice of the channels: no
// per-thread scratch, and sums in an order that does not depend on the thread count.
#include "kernels/layernorm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backend/threads.h"
#include "kernels/prefetch.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

// The forward asks for the rows it adds and normalises two rows ahead (kernels/prefetch.h):
// config C's residual add and layernorm over 4096 x 384 from memory took 1.07-1.14 ms a call
// without, 0.83-0.98 with (Sapphire Rapids class Xeon, 2 threads; 4 and 8 rows ahead gained
// less, and backward's row pass gained nothing).
constexpr int64_t kForwardRowsAhead = 2;

// With b null: layernorm of a. Otherwise res = a + b first, and the layernorm of res.
template <class Out>
void forward_rows(float* res, Out* out, float* mean, float* rstd, const float* a, const float* b,
                  const float* weight, const float* bias, int64_t N, int64_t C, float eps) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        if (n + kForwardRowsAhead < N) {
            prefetch_lines(a + (n + kForwardRowsAhead) * C, C);
            if (b != nullptr) prefetch_lines(b + (n + kForwardRowsAhead) * C, C);
        }
        const float* x = a + n * C;
        if (b != nullptr) {
            float* r = res + n * C;
            const float* y = b + n * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) r[c] = x[c] + y[c];
            x = r;
        }
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t c = 0; c < C; c++) sum += x[c];
        const float m = sum / C;
        float var = 0.0f;  // two passes: x - m first, so large means do not cancel
#pragma omp simd reduction(+ : var)
        for (int64_t c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        const float s = 1.0f / std::sqrt(var / C + eps);
        Out* o = out + n * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) o[c] = float_to<Out>((x[c] - m) * s * weight[c] + bias[c]);
        mean[n] = m;
        rstd[n] = s;
    }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int64_t C, float eps) {
    forward_rows<float>(nullptr, out, mean, rstd, inp, nullptr, weight, bias, N, C, eps);
}

void layernorm_forward(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int64_t C, float eps) {
    forward_rows<bf16>(nullptr, out, mean, rstd, inp, nullptr, weight, bias, N, C, eps);
}

void residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int64_t N,
                                int64_t C, float eps) {
    forward_rows<float>(res, out, mean, rstd, a, b, weight, bias, N, C, eps);
}

void residual_layernorm_forward(float* res, bf16* out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int64_t N,
                                int64_t C, float eps) {
    forward_rows<bf16>(res, out, mean, rstd, a, b, weight, bias, N, C, eps);
}

namespace {

// dinp += the input gradient, and with dinp_h its bf16 copy as each row is finished: the rows
// shared among the team (its barrier at the end).
void input_grad_rows(float* dinp, bf16* dinp_h, const float* dout, const float* inp, const float* weight,
                     const float* mean, const float* rstd, int64_t N, int64_t C) {
    // dxhat = dout * w;  dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
    // Derivation: docs/derivations/layernorm_backward.md.
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const float* x = inp + n * C;
        const float* d = dout + n * C;
        const float m = mean[n], s = rstd[n];
        float sum_dxhat = 0.0f, sum_dxhat_xhat = 0.0f;
#pragma omp simd reduction(+ : sum_dxhat, sum_dxhat_xhat)
        for (int64_t c = 0; c < C; c++) {
            const float dxhat = d[c] * weight[c];
            sum_dxhat += dxhat;
            sum_dxhat_xhat += dxhat * (x[c] - m) * s;
        }
        const float a = sum_dxhat / C, b = sum_dxhat_xhat / C;
        float* dx = dinp + n * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) {
            const float xhat = (x[c] - m) * s;
            dx[c] += s * (d[c] * weight[c] - a - xhat * b);
        }
        if (dinp_h == nullptr) continue;
        bf16* h = dinp_h + n * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) h[c] = lmforge::to_bf16(dx[c]);
    }
}

// The channel pass below reads each row's slice of its matrices as a short stretch, a whole row
// apart from the next: the hardware prefetchers do not run ahead of that, and the pass waited on
// its loads. Config C's 4096 x 384 gradients, with the bf16 copy and the sums, took 1.09-1.55 ms
// a call from cold buffers, 0.86-0.87 with each row's slice asked for 8 rows ahead (Zen 5, 2
// threads; 4 and 16 rows ahead were no faster).
// GELU's fused backward, which walks its rows the same way, gained nothing: it waits on its
// arithmetic.
constexpr int64_t kChannelPassRowsAhead = 8;

// Asks for columns [c0, c1) of row n + kChannelPassRowsAhead of m (N rows of C), where there
// is one.
void prefetch_row_ahead(const float* m, int64_t n, int64_t N, int64_t C, long c0, long c1) {
    if (n + kChannelPassRowsAhead >= N) return;
    prefetch_lines(m + (n + kChannelPassRowsAhead) * C + c0, c1 - c0);
}

// Over every row in order, this thread's channels [c0, c1): dweight, dbias += their sums; with
// dinp_sums, dinp's column sums written there.
void channel_sums(float* dweight, float* dbias, float* dinp_sums, const float* dinp, const float* dout,
                  const float* inp, const float* mean, const float* rstd, int64_t N, int64_t C, long c0, long c1) {
    if (dinp_sums != nullptr) std::fill(dinp_sums + c0, dinp_sums + c1, 0.0f);
    for (int64_t n = 0; n < N; n++) {
        const float* x = inp + n * C;
        const float* d = dout + n * C;
        const float m = mean[n], s = rstd[n];
        prefetch_row_ahead(inp, n, N, C, c0, c1);
        prefetch_row_ahead(dout, n, N, C, c0, c1);
        if (dinp_sums != nullptr) prefetch_row_ahead(dinp, n, N, C, c0, c1);
#pragma omp simd
        for (long c = c0; c < c1; c++) {
            dweight[c] += d[c] * (x[c] - m) * s;
            dbias[c] += d[c];
        }
        if (dinp_sums == nullptr) continue;
        const float* g = dinp + n * C;
#pragma omp simd
        for (long c = c0; c < c1; c++) dinp_sums[c] += g[c];
    }
}

void backward(float* dinp, bf16* dinp_h, float* dinp_sums, float* dweight, float* dbias, const float* dout,
              const float* inp, const float* weight, const float* mean, const float* rstd, int64_t N, int64_t C) {
#pragma omp parallel
    {
        input_grad_rows(dinp, dinp_h, dout, inp, weight, mean, rstd, N, C);
        // Not a structured binding: clang cannot capture one in the `omp simd` loops.
        const backend::Range slice = backend::thread_slice(C, omp_get_thread_num(), omp_get_num_threads());
        channel_sums(dweight, dbias, dinp_sums, dinp, dout, inp, mean, rstd, N, C, slice.begin, slice.end);
    }
}

}  // namespace

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int64_t N, int64_t C) {
    backward(dinp, nullptr, nullptr, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

void layernorm_backward(float* dinp, bf16* dinp_h, float* dinp_sums, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd, int64_t N,
                        int64_t C) {
    backward(dinp, dinp_h, dinp_sums, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
