#include "kernels/encoder.h"

#include <omp.h>

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

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
