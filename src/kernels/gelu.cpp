#include "kernels/gelu.h"

#include <type_traits>

#include "kernels/bf16.h"
#include "kernels/fast_math.h"

namespace lmforge::kernels {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

template <class Out>
void forward(Out* out, const float* inp, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
        out[i] = float_to<Out>(0.5f * x * (1.0f + fast_tanh(u)));
    }
}

}  // namespace

void gelu_forward(float* out, const float* inp, int64_t n) { forward(out, inp, n); }

void gelu_forward(bf16* out, const float* inp, int64_t n) { forward(out, inp, n); }

void gelu_backward(float* dinp, const float* dout, const float* inp, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
        const float th = fast_tanh(u);
        const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
        const float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
        dinp[i] = grad * dout[i];
    }
}

}  // namespace lmforge::kernels
