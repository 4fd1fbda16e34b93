// tanh as an activation (BERT's pooler: tanh of a linear layer on the first token).
#pragma once

#include <cstdint>

namespace lmforge::kernels {

// out (n) = tanh(inp (n)), to about 1e-7 absolute (fast_tanh). out may alias inp.
void tanh_forward(float* out, const float* inp, int64_t n);

// Writes (=): dinp = dout · (1 − out²), from forward's output. All (n); dinp may alias dout.
void tanh_backward(float* dinp, const float* dout, const float* out, int64_t n);

}  // namespace lmforge::kernels
