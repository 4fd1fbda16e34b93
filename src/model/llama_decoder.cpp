#include "model/llama_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/attention_decode.h"
#include "kernels/linear.h"
#include "kernels/residual.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace lmforge {

using namespace kernels;

LlamaDecoder::LlamaDecoder(std::unique_ptr<Llama> owned, backend::Gemm& gemm) : LlamaDecoder(*owned, gemm) {
    owned_ = std::move(owned);
}

LlamaDecoder::LlamaDecoder(const Llama& model, backend::Gemm& gemm)
    : model_(model),
      gemm_(gemm),
      capacity_(std::min(model.config().block_size, kMaxCachePositions)) {
    const LlamaConfig& c = model.config();
    const int64_t C = c.n_embd, KV = c.kv_width(), I = c.intermediate;
    x_ = AlignedBuffer<float>(C);
    ln_ = AlignedBuffer<float>(C);
    qkv_ = AlignedBuffer<float>(c.qkv_width());
    att_ = AlignedBuffer<float>(C);
    proj_ = AlignedBuffer<float>(C);
    gate_up_ = AlignedBuffer<float>(2 * I);
    act_ = AlignedBuffer<float>(I);
    logits_ = AlignedBuffer<float>(c.padded_vocab());
    rstd_ = AlignedBuffer<float>(1);
    cos_ = AlignedBuffer<float>(c.head_size() / 2);
    sin_ = AlignedBuffer<float>(c.head_size() / 2);
    kcache_ = AlignedBuffer<float>(c.n_layer * capacity_ * KV);
    vcache_ = AlignedBuffer<float>(c.n_layer * capacity_ * KV);
    scratch_ = AlignedBuffer<float>(c.n_head * capacity_);
}

void LlamaDecoder::block(int64_t l, float* x) {
    const LlamaConfig& c = model_.config();
    const LlamaLayerWeights<float*>& p = model_.weights().layers[l];
    const int64_t C = c.n_embd, KV = c.kv_width(), I = c.intermediate, t = position_;
    const auto eps = static_cast<float>(c.rms_norm_eps);
    float* kc = kcache_.data() + l * capacity_ * KV;
    float* vc = vcache_.data() + l * capacity_ * KV;
    rmsnorm_forward(ln_.data(), rstd_.data(), x, p.input_norm, 1, C, eps);
    linear_forward(gemm_, qkv_.data(), ln_.data(), p.qkv, nullptr, 1, C, c.qkv_width());
    rope_forward(qkv_.data(), cos_.data(), sin_.data(), 1, 1, c.qkv_width(), c.n_head + c.n_kv_head, c.head_size());
    std::memcpy(kc + t * KV, qkv_.data() + C, sizeof(float) * KV);       // this position's key ...
    std::memcpy(vc + t * KV, qkv_.data() + C + KV, sizeof(float) * KV);  // ... and value
    attention_decode(att_.data(), qkv_.data(), kc, vc, t + 1, KV, C, c.n_head, c.n_kv_head, scratch_.data());
    linear_forward(gemm_, proj_.data(), att_.data(), p.o_proj, nullptr, 1, C, C);
    residual_forward(x, x, proj_.data(), C);
    rmsnorm_forward(ln_.data(), rstd_.data(), x, p.post_norm, 1, C, eps);
    linear_forward(gemm_, gate_up_.data(), ln_.data(), p.gate_up, nullptr, 1, C, 2 * I);
    swiglu_forward(act_.data(), gate_up_.data(), 1, I);
    linear_forward(gemm_, proj_.data(), act_.data(), p.down_proj, nullptr, 1, I, C);
    residual_forward(x, x, proj_.data(), C);
}

const float* LlamaDecoder::step(int32_t token) {
    const LlamaConfig& c = model_.config();
    const LlamaParams& w = model_.weights();
    const int64_t C = c.n_embd;
    if (position_ >= capacity_) {
        throw InputError(fmt::format("the sequence reached the decoder's cache of {} positions", capacity_),
                         "ask for fewer new tokens or a shorter prompt");
    }
    if (token < 0 || token >= c.vocab_size) {
        throw InputError(fmt::format("token id {} is outside the vocabulary [0, {})", token, c.vocab_size));
    }
    float* x = x_.data();
    std::copy_n(w.embed + static_cast<int64_t>(token) * C, C, x);
    rope_tables(cos_.data(), sin_.data(), model_.inv_freq(), c.head_size(), position_, 1);
    for (int64_t l = 0; l < c.n_layer; l++) block(l, x);
    rmsnorm_forward(ln_.data(), rstd_.data(), x, w.norm, 1, C, static_cast<float>(c.rms_norm_eps));
    const float* head = c.tie_embeddings ? w.embed : w.lm_head;
    gemm_.run({.M = 1, .N = c.padded_vocab(), .K = C, .trans_b = true}, ln_.data(), head, logits_.data());
    position_++;
    return logits_.data();
}

std::unique_ptr<Decoder> Llama::decoder(backend::Gemm& gemm) const {
    if (lora_.enabled()) return std::make_unique<LlamaDecoder>(merged(gemm), gemm);
    return std::make_unique<LlamaDecoder>(*this, gemm);
}

}  // namespace lmforge
