// The residual connection: out = a + b.
#pragma once

#include <cstdint>

namespace lmforge::kernels {

// out, a, b: (n). out may alias a or b.
void residual_forward(float* out, const float* a, const float* b, int64_t n);

// Accumulates (+=): da += dout; db += dout. All (n).
void residual_backward(float* da, float* db, const float* dout, int64_t n);

}  // namespace lmforge::kernels
