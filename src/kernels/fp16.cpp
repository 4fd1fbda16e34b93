#include "kernels/fp16.h"

#include <bit>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "kernels/isa_begin.h"

namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE {

namespace {

// _Float16's scalar conversions: F16C's instructions where the level has them, libgcc's exact
// software ones at the baseline.
inline float round_one(float x) { return static_cast<float>(static_cast<_Float16>(x)); }

}  // namespace

void round_to_fp16(float* out, const float* in, int64_t n) {
#if defined(__F16C__)
    const int64_t vectors = n / 8;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < vectors; v++) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + 8 * v), _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_ps(out + 8 * v, _mm256_cvtph_ps(h));
    }
    for (int64_t i = 8 * vectors; i < n; i++) out[i] = round_one(in[i]);
#else
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = round_one(in[i]);
#endif
}

void to_fp16(uint16_t* out, const float* in, int64_t n) {
#if defined(__F16C__)
    const int64_t vectors = n / 8;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < vectors; v++) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + 8 * v), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 8 * v), h);
    }
    for (int64_t i = 8 * vectors; i < n; i++) out[i] = std::bit_cast<uint16_t>(static_cast<_Float16>(in[i]));
#else
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = std::bit_cast<uint16_t>(static_cast<_Float16>(in[i]));
#endif
}

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
