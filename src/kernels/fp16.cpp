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
inline _Float16 half_of(float x) { return static_cast<_Float16>(x); }
inline void store(float* out, _Float16 h) { *out = static_cast<float>(h); }
inline void store(uint16_t* out, _Float16 h) { *out = std::bit_cast<uint16_t>(h); }

#if defined(__F16C__)
inline void store8(float* out, __m128i h) { _mm256_storeu_ps(out, _mm256_cvtph_ps(h)); }
inline void store8(uint16_t* out, __m128i h) { _mm_storeu_si128(reinterpret_cast<__m128i*>(out), h); }
#endif

// out (n) = in (n) rounded to fp16, stored as fp32 values or fp16 bits.
template <class Out>
void round_all(Out* out, const float* in, int64_t n) {
#if defined(__F16C__)
    const int64_t vectors = n / 8;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < vectors; v++) {
        store8(out + 8 * v, _mm256_cvtps_ph(_mm256_loadu_ps(in + 8 * v), _MM_FROUND_TO_NEAREST_INT));
    }
    for (int64_t i = 8 * vectors; i < n; i++) store(out + i, half_of(in[i]));
#else
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) store(out + i, half_of(in[i]));
#endif
}

}  // namespace

void round_to_fp16(float* out, const float* in, int64_t n) { round_all(out, in, n); }

void to_fp16(uint16_t* out, const float* in, int64_t n) { round_all(out, in, n); }

}  // namespace lmforge::kernels::LMFORGE_ISA_NAMESPACE

#include "kernels/isa_end.h"
