// SwiGLU, Llama's MLP activation, as transformers' LlamaMLP: act_fn(gate_proj(x)) · up_proj(x)
// with act_fn = SiLU (torch.nn.functional.silu: x·sigmoid(x),
// https://pytorch.org/docs/stable/generated/torch.nn.SiLU.html). gate_proj and up_proj are one
// fused GEMM here, whose output rows hold gate then up; down_proj is the caller's.
#pragma once

#include <cstdint>

#include "kernels/bf16.h"

namespace lmforge::kernels {

// gate_up (N, 2H): each row is gate (H) then up (H) (one fused GEMM's output).
// out (N, H) = silu(gate) · up, silu(x) = x·sigmoid(x). out may not alias gate_up.
void swiglu_forward(float* out, const float* gate_up, int64_t N, int64_t H);
// The same with the output in bfloat16, in mixed precision, where it only feeds down_proj's GEMM.
void swiglu_forward(bf16* out, const float* gate_up, int64_t N, int64_t H);
// And from gate_up kept in bfloat16 (mixed precision keeps it so for backward).
void swiglu_forward(bf16* out, const bf16* gate_up, int64_t N, int64_t H);
// Mixed precision's forward from the GEMM's fp32 gate_up: writes gate_up_h = gate_up rounded to
// bf16, the copy kept for backward and recompute, and out from it, bit for bit what
// swiglu_forward(out, gate_up_h) then gives, in one pass over gate_up instead of two.
void swiglu_forward(bf16* out, bf16* gate_up_h, const float* gate_up, int64_t N, int64_t H);

// Writes (=) dgate_up (N, 2H) from dout (N, H): d gate = dout · up · silu'(gate),
// d up = dout · silu(gate). dgate_up may not alias gate_up or dout.
void swiglu_backward(float* dgate_up, const float* dout, const float* gate_up, int64_t N,
                     int64_t H);
// Mixed precision: the same gradient written in bf16 (it only feeds the GEMMs).
void swiglu_backward(bf16* dgate_up, const float* dout, const float* gate_up, int64_t N,
                     int64_t H);
void swiglu_backward(bf16* dgate_up, const float* dout, const bf16* gate_up, int64_t N, int64_t H);

}  // namespace lmforge::kernels
