// A sequence-classification head on pooled hidden states (one row per sequence, e.g. the last
// non-padding token's, as Hugging Face's GPT2ForSequenceClassification, or BERT's pooled first
// token): logits = h · scoreᵀ (+ bias: GPT-2's head has none, BERT's has one), softmax
// cross-entropy against integer labels. Sizes are small (B sequences, L labels), so this is
// plain loops; the body's GEMMs dominate.
#pragma once

#include <cstdint>

namespace lmforge::kernels {

// h (B, C), score (L, C), bias (L) or null: logits (B, L). With labels (B, each in [0, L)),
// losses (B) too.
void classifier_forward(float* logits, float* losses, const float* h, const float* score, const float* bias,
                        const int32_t* labels, int64_t B, int64_t C, int64_t L);

// For loss = dloss · Σ losses: writes (=) dh (B, C); dscore (L, C) and dbias (L) += (or =,
// with accumulate false). dbias may be null (a head without bias).
void classifier_backward(float* dh, float* dscore, float* dbias, bool accumulate, const float* logits,
                         const float* h, const float* score, const int32_t* labels, float dloss, int64_t B, int64_t C,
                         int64_t L);

}  // namespace lmforge::kernels
