// Llama's parameters under Hugging Face's names (model.layers.N.self_attn.q_proj.weight, ...),
// in torch.nn.Linear's (out, in) layout, so checkpoints move without renaming or transposing.
// A block's q, k and v projections lie side by side, as do gate and up: each trio or pair is
// one (out, in) matrix in memory, so one GEMM computes it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "model/llama_config.h"
#include "model/param_layout.h"

namespace lmforge {

// Views of the tensors, P a pointer to their element type: float* (parameters, gradients) or
// const uint16_t* (bfloat16 copies).
template <class P>
struct LlamaLayerWeights {
    P input_norm = nullptr;  // (C)
    P qkv = nullptr;         // q_proj (C, C), k_proj (KVC, C), v_proj (KVC, C): (C + 2 KVC, C)
    P o_proj = nullptr;      // (C, C)
    P post_norm = nullptr;   // (C)
    P gate_up = nullptr;     // gate_proj (I, C), up_proj (I, C): (2I, C)
    P down_proj = nullptr;   // (C, I)
};

template <class P>
struct LlamaWeights {
    P embed = nullptr;  // (Vp, C); rows >= V are zero
    std::vector<LlamaLayerWeights<P>> layers;
    P norm = nullptr;     // (C)
    P lm_head = nullptr;  // (Vp, C) untied; null when tied (the head is embed)
    P score = nullptr;    // (num_labels, C): the classification head; null without one
};

using LlamaParams = LlamaWeights<float*>;
using LlamaHalfParams = LlamaWeights<const uint16_t*>;

// with_score false: the body and LM head alone (what LoRA freezes; its classifier trains).
ParamLayout llama_param_layout(const LlamaConfig& cfg, bool with_score = true);

// Views of a flat buffer laid out by llama_param_layout(cfg, with_score).
template <class T>
LlamaWeights<T*> bind_llama_params(const LlamaConfig& cfg, const ParamLayout& layout, T* base);

// As transformers initialises LlamaPreTrainedModel: every matrix normal(0, 0.02), the norms 1.
void init_llama_params(const ParamLayout& layout, float* base, Rng& rng);

}  // namespace lmforge
