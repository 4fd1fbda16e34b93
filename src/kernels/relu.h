// ReLU as an activation (DistilBERT's classification head: ReLU of a linear layer on the first
// token, where BERT's pooler has tanh).
#pragma once

#include <cstdint>

namespace lmforge::kernels {

// out (n) = max(inp (n), 0). out may alias inp.
void relu_forward(float* out, const float* inp, int64_t n);

// Writes (=): dinp = dout where forward's output is positive, else 0. All (n); dinp may alias
// dout. The gradient at 0 is taken as 0, as torch's.
void relu_backward(float* dinp, const float* dout, const float* out, int64_t n);

}  // namespace lmforge::kernels
