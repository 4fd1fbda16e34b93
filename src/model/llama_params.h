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

struct LlamaLayerParams {
    float* input_norm;  // (C)
    float* qkv;         // q_proj (C, C), k_proj (KVC, C), v_proj (KVC, C): (C + 2 KVC, C)
    float* o_proj;      // (C, C)
    float* post_norm;   // (C)
    float* gate_up;     // gate_proj (I, C), up_proj (I, C): (2I, C)
    float* down_proj;   // (C, I)
};

struct LlamaParams {
    float* embed = nullptr;  // (Vp, C); rows >= V are zero
    std::vector<LlamaLayerParams> layers;
    float* norm = nullptr;     // (C)
    float* lm_head = nullptr;  // (Vp, C) untied; null when tied (the head is embed)
    float* score = nullptr;    // (num_labels, C): the classification head; null without one
};

ParamLayout llama_param_layout(const LlamaConfig& cfg);

// Views of a flat buffer laid out by llama_param_layout(cfg) (parameters or gradients).
LlamaParams bind_llama_params(const LlamaConfig& cfg, const ParamLayout& layout, float* base);

// As transformers initialises LlamaPreTrainedModel: every matrix normal(0, 0.02), the norms 1.
void init_llama_params(const ParamLayout& layout, float* base, Rng& rng);

}  // namespace lmforge
