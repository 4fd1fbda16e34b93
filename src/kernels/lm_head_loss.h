// The tied LM head and the cross-entropy loss, fused and computed in vocabulary chunks so the
// (N, V) logits never exist in full: forward keeps a running maximum and sum of exponentials
// per row (an online log-sum-exp, as attention's softmax); backward recomputes each chunk's
// logits, turns them into dlogits with the saved log-sum-exp and feeds both gradient GEMMs
// before the next chunk. The price is one more GEMM of the head's forward size; the saving is
// the logits and dlogits buffers (N · Vp floats and bf16s: 600 MiB at B=8, T=256 for GPT-2's
// vocabulary). Training, which knows backward follows, takes a third way without that price:
// lm_head_loss_train, forward and backward at once over blocks of rows with all their logits
// (at most 64 MiB: all N rows, the full logits, where they fit in that). Padded columns
// V..Vp-1 of the embedding never enter the loss.
//
// In is float, or bf16 in mixed precision (GEMM inputs in bf16, logits and sums in fp32).
// Same semantics as crossentropy_forward/backward after logits = x · wteᵀ + bias (tested so).
// The bias (V) is optional: GPT-2's head has none; BERT's MLM decoder has one.
#pragma once

#include <cstdint>

#include "backend/gemm.h"
#include "kernels/crossentropy.h"
#include "kernels/grad_out.h"
#include "kernels/soft_targets.h"

namespace lmforge::kernels {

struct LmHeadLossShape {
    int64_t N = 0, C = 0, V = 0, Vp = 0;  // rows, width, vocabulary, padded vocabulary
    int64_t chunk = 0;                    // vocabulary columns per chunk (forward, backward)
    int64_t rows = 0;                     // rows per block (lm_head_loss_train)
};

// The chunk lmforge uses for N rows: about 8 MiB of fp32 logits (a multiple of 64 columns, at
// least 64, at most V): small enough to stay in cache between the GEMM and the softmax.
int64_t lm_head_chunk(int64_t N, int64_t V);

// x (N, C): the final layernorm's output; wte (Vp, C): the tied embedding; bias (V) or null;
// targets (N) in [0, V) or kIgnoreIndex. Writes losses (N) (0 where ignored) and lse (N) for
// backward, target_logit (N) (the target's logit, 0 where ignored) and, if not null, row_max
// (N), each row's largest logit: target_logit >= row_max says the target is an argmax.
// Scratch: logits_chunk (N · chunk floats).
template <class In>
void lm_head_loss_forward(backend::Gemm& gemm, const LmHeadLossShape& s, float* losses, float* lse, const In* x,
                          const In* wte, const float* bias, const int32_t* targets, float* logits_chunk,
                          float* target_logit, float* row_max = nullptr);

// For loss = dloss · Σ losses: writes (=) dx (N, C); dwte (Vp, C) += or = (accumulate) the
// head's share (padded rows get zero), in fp32 or, with bf16 inputs, bf16 (kernels/grad_out.h);
// dbias (V) += or = the column sums of dlogits, taken in fp32 (also in mixed precision). bias
// and dbias may be null. dlogits_chunk: N · chunk scratch; in fp32 it may be logits_chunk itself
// (in bf16 with dbias, logits_chunk keeps the fp32 dlogits for the column sums).
template <class In>
void lm_head_loss_backward(backend::Gemm& gemm, const LmHeadLossShape& s, float* dx, GradOut dwte, float* dbias,
                           bool accumulate, const In* x, const In* wte, const float* bias, const float* lse,
                           const int32_t* targets, float dloss, float* logits_chunk, In* dlogits_chunk);

// The block lm_head_loss_train uses for N rows of a V-word vocabulary: 64 MiB of fp32 logits
// in whole multiples of 64 rows, or 256 rows if that is more (a large vocabulary: the GEMMs
// turn skinny below), and at most N (at least 1). All N rows where their logits fit in 64 MiB:
// a second block would only make every GEMM half as deep or tall.
int64_t lm_head_rows(int64_t N, int64_t V);

// The floats between rows of lm_head_loss_train's logits block: V rounded up to 16, so that
// each row of an aligned block starts a cache line. On config B (V = 50257, blocks of 320
// rows, bf16, Zen 4, 2 threads) oneDNN's logits GEMM took 33.8 ms a block into rows V floats
// apart and 32.4 into rows 50272 apart, and the weight gradient's GEMM reading them 35.8
// against 34.0; in the step, the head went from 677 to 639 ms.
int64_t lm_head_row_stride(int64_t V);

// Whether lm_head_loss_train takes its one pass with this GEMM (else the chunked passes: bf16
// inputs where the GEMM multiplies on AMX tiles, as that measured faster). A frozen head
// (dwte null) takes neither: it streams the vocabulary (lm_head_loss_train).
bool lm_head_one_pass(const backend::Gemm& gemm, bool bf16_inputs);

// The scratch the head needs for N rows, in floats for the logits and in elements of the
// input type for the dlogits: N · chunk for the chunked passes, or, if training takes the one
// pass, the larger of that and one block of rows (lm_head_row_stride(V) floats each).
int64_t lm_head_scratch(int64_t N, int64_t V, bool one_pass);

// The dlogits scratch in mixed precision (elements of bf16): N · chunk, or as much as
// lm_head_scratch if training takes the one pass with a bias. Without a bias the one pass
// writes its bf16 dlogits over its own fp32 logits.
int64_t lm_head_dlogits_scratch(int64_t N, int64_t V, bool one_pass, bool bias);

// Training's forward and backward in one pass (for loss = dloss · Σ losses): the rows go in
// blocks of s.rows, each with all V logits, so a row's log-sum-exp is exact as soon as its
// block is multiplied, and the block's dlogits feed both gradient GEMMs at once. That saves
// the logits GEMM that lm_head_loss_backward repeats (a quarter of the head's work) for a
// block of s.rows rows of logits as scratch instead of N · chunk. Writes what forward writes
// (losses, lse, target_logit, row_max if not null) and what backward writes (dx =, dwte and
// dbias = or +=). logits_block: s.rows rows of lm_head_row_stride(V) floats (of V with a bias
// gradient, whose column sums read them packed); dlogits_block: as many In, which in fp32 may be
// logits_block itself; in mixed precision without a bias the one pass leaves it unused and
// writes the dlogits over the logits (lm_head_dlogits_scratch). Where lm_head_one_pass is
// false it is lm_head_loss_forward then lm_head_loss_backward instead, on s.N · s.chunk of
// each (lm_head_scratch). With soft targets it always takes the one pass, as a row's soft term
// needs all its logits at once; where the chunked passes are the rule, in blocks of as many
// rows as their scratch holds.
// A frozen head (dwte null: LoRA's) without a bias or soft targets streams the vocabulary
// instead, in chunks of s.chunk columns over all rows: each chunk's exponentials are multiplied
// into dx at once, rescaled as a row's maximum grows (as attention's softmax does), and divided
// by the row's sum at the end. The one pass's two GEMMs on s.N · s.chunk floats of logits_block
// (the exponentials over their own logits; dlogits_block unused).
template <class In>
void lm_head_loss_train(backend::Gemm& gemm, const LmHeadLossShape& s, float* losses, float* lse, float* dx,
                        GradOut dwte, float* dbias, bool accumulate, const In* x, const In* wte, const float* bias,
                        const int32_t* targets, float dloss, float* logits_block, In* dlogits_block,
                        float* target_logit, float* row_max = nullptr, const SoftTargets* soft = nullptr);

}  // namespace lmforge::kernels
