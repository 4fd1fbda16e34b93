// Token + position embedding: the first layer of GPT-2; and the token embedding alone, the first
// layer of models whose positions are rotary (Llama).
#pragma once

#include <cstdint>

namespace lmforge::kernels {

// out (B, T, C) = wte[inp[b, t]] + wpe[t].  inp (B, T) ids < V (checked by the caller);
// wte (V, C); wpe (maxT >= T, C).
void encoder_forward(float* out, const int32_t* inp, const float* wte, const float* wpe,
                     int64_t B, int64_t T, int64_t C);

// Accumulates (+=): dwte[inp[b, t]] += dout[b, t]; dwpe[t] += sum over b of dout[b, t].
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* inp,
                      int64_t B, int64_t T, int64_t C);

// out (N, C) = wte[inp[n]]. inp (N) ids < V (checked by the caller); wte (V, C).
void token_embedding_forward(float* out, const int32_t* inp, const float* wte, int64_t N, int64_t C);

// The same from a bfloat16 table (LoRA's frozen base in mixed precision), widened exactly.
void token_embedding_forward(float* out, const int32_t* inp, const uint16_t* wte, int64_t N, int64_t C);

// Accumulates (+=): dwte[inp[n]] += dout[n], in an order fixed whatever the thread count.
void token_embedding_backward(float* dwte, const float* dout, const int32_t* inp, int64_t N, int64_t C);

// The same into gradients kept in bfloat16 (train.grads = "bf16"): each token's rows are summed
// in fp32 first, in position order, and added to its row once, rounded to nearest. (Rounding
// every position's add would drop a frequent token's small terms.)
void token_embedding_backward(uint16_t* dwte, const float* dout, const int32_t* inp, int64_t N, int64_t C);

// encoder_backward with dwte in bfloat16, added as token_embedding_backward's; dwpe as ever.
void encoder_backward(uint16_t* dwte, float* dwpe, const float* dout, const int32_t* inp,
                      int64_t B, int64_t T, int64_t C);

}  // namespace lmforge::kernels
