// Distillation's hidden-state term (DistilBERT's cosine loss): how far each of the student's
// final hidden states points from the teacher's, 1 − cos(h, t), and its gradient.
#pragma once

#include <cstdint>

#include "core/bf16.h"

namespace lmforge::kernels {

// For m < M, the student's row h[rows[m]] (C; In: float, or bf16 where mixed precision keeps
// only that) against the teacher's t[m] (C): loss[m] = 1 − h·t / (max(|h|, ε) max(|t|, ε)),
// ε = 1e-8 as torch's cosine_similarity. Adds (+=) scale · ∂loss[m]/∂h into dh at row rows[m].
template <class In>
void cosine_distance_backward(float* dh, float* loss, const In* h, const float* t, const int32_t* rows, int64_t M,
                              int64_t C, float scale);

}  // namespace lmforge::kernels
