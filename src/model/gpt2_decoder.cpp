#include "model/gpt2_decoder.h"

#include <fmt/format.h>

#include <cstring>

#include "core/error.h"
#include "kernels/attention_decode.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/residual.h"

namespace lmforge {

using namespace kernels;

Gpt2Decoder::Gpt2Decoder(const Gpt2& model, backend::Gemm& gemm) : model_(model), gemm_(gemm) {
    const Gpt2Config& c = model.config();
    const int64_t C = c.n_embd;
    x_ = AlignedBuffer<float>(C);
    ln_ = AlignedBuffer<float>(C);
    qkv_ = AlignedBuffer<float>(3 * C);
    att_ = AlignedBuffer<float>(C);
    proj_ = AlignedBuffer<float>(C);
    fc_ = AlignedBuffer<float>(4 * C);
    fc_gelu_ = AlignedBuffer<float>(4 * C);
    logits_ = AlignedBuffer<float>(c.padded_vocab());
    mean_ = AlignedBuffer<float>(1);
    rstd_ = AlignedBuffer<float>(1);
    kcache_ = AlignedBuffer<float>(c.n_layer * c.block_size * C);
    vcache_ = AlignedBuffer<float>(c.n_layer * c.block_size * C);
    scratch_ = AlignedBuffer<float>(c.n_head * c.block_size);
}

const float* Gpt2Decoder::step(int32_t token) {
    const Gpt2Config& c = model_.config();
    const Gpt2Params& w = model_.weights();
    const int64_t C = c.n_embd, T = c.block_size, t = position_;
    if (t >= T) {
        throw InputError(fmt::format("the sequence reached the model's block_size ({})", T),
                         "ask for fewer new tokens or a shorter prompt");
    }
    if (token < 0 || token >= c.vocab_size) {
        throw InputError(fmt::format("token id {} is outside the vocabulary [0, {})", token, c.vocab_size));
    }
    float* x = x_.data();
    for (int64_t i = 0; i < C; i++) x[i] = w.wte[token * C + i] + w.wpe[t * C + i];
    for (int64_t l = 0; l < c.n_layer; l++) {
        const Gpt2LayerParams& p = w.h[l];
        float* kc = kcache_.data() + l * T * C;
        float* vc = vcache_.data() + l * T * C;
        layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x, p.ln_1_weight, p.ln_1_bias, 1, C);
        matmul_forward(gemm_, qkv_.data(), ln_.data(), p.c_attn_weight, p.c_attn_bias, 1, C, 3 * C);
        std::memcpy(kc + t * C, qkv_.data() + C, sizeof(float) * C);  // this position's key ...
        std::memcpy(vc + t * C, qkv_.data() + 2 * C, sizeof(float) * C);  // ... and value
        attention_decode(att_.data(), qkv_.data(), kc, vc, t + 1, C, C, c.n_head, c.n_head, scratch_.data());
        matmul_forward(gemm_, proj_.data(), att_.data(), p.attn_c_proj_weight, p.attn_c_proj_bias, 1, C, C);
        residual_forward(x, x, proj_.data(), C);
        layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x, p.ln_2_weight, p.ln_2_bias, 1, C);
        matmul_forward(gemm_, fc_.data(), ln_.data(), p.c_fc_weight, p.c_fc_bias, 1, C, 4 * C);
        gelu_forward(fc_gelu_.data(), fc_.data(), 4 * C);
        matmul_forward(gemm_, proj_.data(), fc_gelu_.data(), p.mlp_c_proj_weight, p.mlp_c_proj_bias, 1, 4 * C, C);
        residual_forward(x, x, proj_.data(), C);
    }
    layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x, w.ln_f_weight, w.ln_f_bias, 1, C);
    gemm_.run({.M = 1, .N = c.padded_vocab(), .K = C, .trans_b = true}, ln_.data(), w.wte, logits_.data());
    position_++;
    return logits_.data();
}

std::unique_ptr<Decoder> Gpt2::decoder(backend::Gemm& gemm) const { return std::make_unique<Gpt2Decoder>(*this, gemm); }

}  // namespace lmforge
