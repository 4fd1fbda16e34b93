#include "kernels/encoder.h"

#include <omp.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "backend/threads.h"
#include "core/bf16.h"

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

void encoder_forward(float* out, const int32_t* inp, const float* wte, const float* wpe,
                     int64_t B, int64_t T, int64_t C) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; b++) {
        for (int64_t t = 0; t < T; t++) {
            float* o = out + (b * T + t) * C;
            const float* tok = wte + static_cast<int64_t>(inp[b * T + t]) * C;
            const float* pos = wpe + t * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) o[c] = tok[c] + pos[c];
        }
    }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* inp,
                      int64_t B, int64_t T, int64_t C) {
    // Tokens repeat, so rows of dwte collide; each thread owns a slice of the channels instead
    // and scatters every position into it. The order of additions is then fixed, whatever the
    // thread count.
#pragma omp parallel
    {
        // Not a structured binding: clang cannot capture one in the `omp simd` loop below.
        const backend::Range slice = backend::thread_slice(C, omp_get_thread_num(), omp_get_num_threads());
        const long c0 = slice.begin, c1 = slice.end;
        for (int64_t b = 0; b < B; b++) {
            for (int64_t t = 0; t < T; t++) {
                const float* d = dout + (b * T + t) * C;
                float* tok = dwte + static_cast<int64_t>(inp[b * T + t]) * C;
                float* pos = dwpe + t * C;
#pragma omp simd
                for (int64_t c = c0; c < c1; c++) {
                    tok[c] += d[c];
                    pos[c] += d[c];
                }
            }
        }
    }
}

void token_embedding_forward(float* out, const int32_t* inp, const float* wte, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const float* tok = wte + static_cast<int64_t>(inp[n]) * C;
        float* o = out + n * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) o[c] = tok[c];
    }
}

void token_embedding_forward(float* out, const int32_t* inp, const uint16_t* wte, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const uint16_t* tok = wte + static_cast<int64_t>(inp[n]) * C;
        float* o = out + n * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) o[c] = from_bf16(tok[c]);
    }
}

void token_embedding_backward(float* dwte, const float* dout, const int32_t* inp, int64_t N, int64_t C) {
    // As encoder_backward: each thread owns a slice of the channels, so rows that repeat a
    // token never collide and every sum is taken in position order.
#pragma omp parallel
    {
        const backend::Range slice = backend::thread_slice(C, omp_get_thread_num(), omp_get_num_threads());
        const long c0 = slice.begin, c1 = slice.end;
        for (int64_t n = 0; n < N; n++) {
            const float* d = dout + n * C;
            float* tok = dwte + static_cast<int64_t>(inp[n]) * C;
#pragma omp simd
            for (int64_t c = c0; c < c1; c++) tok[c] += d[c];
        }
    }
}

void token_embedding_backward(bf16* dwte, const float* dout, const int32_t* inp, int64_t N, int64_t C) {
    // The positions grouped by token, each group in position order.
    std::vector<int32_t> order(static_cast<size_t>(N));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [inp](int32_t a, int32_t b) { return inp[a] != inp[b] ? inp[a] < inp[b] : a < b; });
    std::vector<int64_t> group_begin;
    for (int64_t i = 0; i < N; i++) {
        if (i == 0 || inp[order[i]] != inp[order[i - 1]]) group_begin.push_back(i);
    }
    group_begin.push_back(N);
    const auto groups = static_cast<int64_t>(group_begin.size()) - 1;
#pragma omp parallel
    {
        std::vector<float> sum(static_cast<size_t>(C));
        float* acc = sum.data();
#pragma omp for schedule(dynamic, 8)
        for (int64_t g = 0; g < groups; g++) {
            std::fill_n(acc, C, 0.0f);
            for (int64_t i = group_begin[g]; i < group_begin[g + 1]; i++) {
                const float* d = dout + static_cast<int64_t>(order[i]) * C;
#pragma omp simd
                for (int64_t c = 0; c < C; c++) acc[c] += d[c];
            }
            bf16* tok = dwte + static_cast<int64_t>(inp[order[group_begin[g]]]) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) tok[c] = lmforge::to_bf16(from_bf16(tok[c]) + acc[c]);
        }
    }
}

void encoder_backward(bf16* dwte, float* dwpe, const float* dout, const int32_t* inp, int64_t B, int64_t T,
                      int64_t C) {
    token_embedding_backward(dwte, dout, inp, B * T, C);
    // Each position's rows in batch order, as the fp32 form adds them.
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; t++) {
        float* pos = dwpe + t * C;
        for (int64_t b = 0; b < B; b++) {
            const float* d = dout + (b * T + t) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) pos[c] += d[c];
        }
    }
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
