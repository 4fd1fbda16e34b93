// GPT-2's parameters: the typed views the model computes with, and the one function that
// declares every tensor (name, shape, init). Layout, binding and init all come from that
// function, so the table and the struct cannot drift apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "model/gpt2_config.h"
#include "model/param_layout.h"

namespace lmforge {

struct Gpt2LayerParams {
    float *ln_1_weight, *ln_1_bias;               // (C)
    float *c_attn_weight, *c_attn_bias;           // (C, 3C), (3C)
    float *attn_c_proj_weight, *attn_c_proj_bias;  // (C, C), (C)
    float *ln_2_weight, *ln_2_bias;               // (C)
    float *c_fc_weight, *c_fc_bias;               // (C, 4C), (4C)
    float *mlp_c_proj_weight, *mlp_c_proj_bias;    // (4C, C), (C)
};

struct Gpt2Params {
    float* wte = nullptr;  // (Vp, C); rows >= V are zero. Also the LM head (tied).
    float* wpe = nullptr;  // (block_size, C)
    std::vector<Gpt2LayerParams> h;
    float *ln_f_weight = nullptr, *ln_f_bias = nullptr;  // (C)
    float* score = nullptr;  // (num_labels, C): the classification head; null without one
};

// How GPT-2 initialises a tensor (see gpt2_params.cpp).
enum class ParamInit { Normal, ResidualProjection, Zeros, Ones };

ParamLayout gpt2_param_layout(const Gpt2Config& cfg);

// Views of a flat buffer laid out by `layout` = gpt2_param_layout(cfg) (parameters or
// gradients).
Gpt2Params bind_gpt2_params(const Gpt2Config& cfg, const ParamLayout& layout, float* base);

// GPT-2 init: weights normal(0, 0.02); the two residual projections per block (attn.c_proj,
// mlp.c_proj) normal(0, 0.02 / sqrt(2 n_layer)); biases 0; LayerNorm weight 1, bias 0.
void init_gpt2_params(const Gpt2Config& cfg, const ParamLayout& layout, float* base, Rng& rng);

}  // namespace lmforge
