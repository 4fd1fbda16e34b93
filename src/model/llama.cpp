#include "model/llama.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>
#include <nlohmann/json.hpp>

#include "core/bf16.h"
#include "core/error.h"
#include "core/fp16.h"
#include "io/safetensors.h"
#include "kernels/attention.h"
#include "kernels/bf16.h"
#include "kernels/encoder.h"
#include "kernels/linear.h"
#include "kernels/matmul.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace lmforge {

using namespace kernels;

namespace {

// The trainable tensors under LoRA: each layer's adapters in block order, then a classifier's
// head, which trains whole (PEFT's modules_to_save); under PEFT's names.
ParamLayout lora_layout(const LlamaConfig& cfg, const LoraOptions& lora) {
    ParamLayout layout;
    const int64_t C = cfg.n_embd, KV = cfg.kv_width(), I = cfg.intermediate, r = lora.rank;
    const int64_t in[kLoraTargets] = {C, C, C, C, C, C, I};
    const int64_t out[kLoraTargets] = {C, KV, KV, C, I, I, C};
    for (int64_t l = 0; l < cfg.n_layer; l++) {
        for (int t = 0; t < kLoraTargets; t++) {
            if (!lora.targets[t]) continue;
            layout.add(lora_tensor_name(l, static_cast<LoraTarget>(t), 'A'), {r, in[t]});
            layout.add(lora_tensor_name(l, static_cast<LoraTarget>(t), 'B'), {out[t], r});
        }
    }
    if (cfg.num_labels > 0) layout.add(kLoraScore, {cfg.num_labels, C});
    return layout;
}

void check_lora(const LoraOptions& lora) {
    if (!lora.enabled()) return;
    if (!(lora.dropout >= 0.0 && lora.dropout < 1.0)) {
        throw InputError(fmt::format("train.lora.dropout = {} must lie in [0, 1)", lora.dropout));
    }
    if (!(lora.alpha > 0.0) || !std::isfinite(lora.alpha)) {
        throw InputError(fmt::format("train.lora.alpha = {} must be a positive number", lora.alpha));
    }
}

// Element i of a stored tensor (F32, F16 or BF16) as T: float, or bf16 rounded to nearest even.
template <class T>
T element(const std::byte* data, Dtype dtype, int64_t i) {
    float x = 0;
    if (dtype == Dtype::BF16) {
        const auto h = std::bit_cast<uint16_t>(std::array<std::byte, 2>{data[2 * i], data[2 * i + 1]});
        if constexpr (std::is_same_v<T, uint16_t>) return h;  // as stored: no rounding twice
        x = from_bf16(h);
    } else if (dtype == Dtype::F16) {
        x = from_f16(std::bit_cast<uint16_t>(std::array<std::byte, 2>{data[2 * i], data[2 * i + 1]}));
    } else {
        std::memcpy(&x, data + 4 * i, sizeof(float));
    }
    if constexpr (std::is_same_v<T, float>) {
        return x;
    } else {
        return to_bf16(x);
    }
}

// Tensor s.name of `file` (F32, F16 or BF16) into out as T (float or bf16), straight from the
// mapped file with no whole-tensor copy; its pages are then dropped from the process, so loading
// a base never holds more than the store and the tensor at hand.
template <class T>
void read_frozen(const SafetensorsReader& file, const ParamSpec& s, T* out) {
    if (!file.contains(s.name)) {
        throw InputError(fmt::format("{}: no tensor '{}'", file.path(), s.name), "the base is of another model");
    }
    const TensorInfo& t = file.info(s.name);
    if (t.shape != s.shape) {
        throw InputError(fmt::format("{}: tensor '{}' has shape [{}], this model needs [{}]", file.path(), s.name,
                                     fmt::join(t.shape, ", "), fmt::join(s.shape, ", ")),
                         "model.init_from must be a base of the configured shape");
    }
    if (t.dtype != Dtype::F32 && t.dtype != Dtype::F16 && t.dtype != Dtype::BF16) {
        throw InputError(fmt::format("{}: tensor '{}' is not F32, F16 or BF16", file.path(), s.name));
    }
    const std::span<const std::byte> raw = file.raw(s.name);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < s.numel; i++) out[i] = element<T>(raw.data(), t.dtype, i);
    std::fill(out + s.numel, out + s.reserved, T{0});  // padding rows
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(raw.data()) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(raw.data()) + raw.size()) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace

Llama::Llama(const LlamaConfig& cfg, backend::Gemm& gemm, Precision precision, Recompute recompute,
             const LoraOptions& lora)
    : CausalLm(lora.enabled() ? lora_layout(validated(cfg), lora) : llama_param_layout(validated(cfg)), precision,
               gemm, {.C = cfg.n_embd, .V = cfg.vocab_size, .Vp = cfg.padded_vocab(), .L = cfg.num_labels}),
      cfg_(cfg),
      recompute_(recompute),
      lora_(lora),
      inv_freq_(cfg.head_size() / 2) {
    check_lora(lora_);
    const int64_t C = cfg_.n_embd;
    if (lora_.enabled()) {
        bind_frozen();
        bind_adapters();
        accumulated_grads_.emplace_back(grads_.fp32().data(), grads_.fp32().size());  // adapters only add to theirs
    } else {
        p_ = bind_llama_params(cfg_, layout_, params_.data());
        if (precision_ == Precision::Bf16) ph_ = bind_llama_params(cfg_, layout_, std::as_const(params_h_).data());
        for (int64_t l = 0; l < cfg_.n_layer; l++) {
            block_begin_.push_back(layout_.find(fmt::format("model.layers.{}.input_layernorm.weight", l)).offset);
            accumulated_grads_.emplace_back(grad_of(p_.layers[l].input_norm), static_cast<size_t>(C));
            accumulated_grads_.emplace_back(grad_of(p_.layers[l].post_norm), static_cast<size_t>(C));
        }
        block_begin_.push_back(layout_.find("model.norm.weight").offset);
        accumulated_grads_.emplace_back(grad_of(p_.norm), static_cast<size_t>(C));
        // The embedding's gradient is only added to, unless the LM head (tied) writes it first.
        if (embed_only_added()) {
            accumulated_grads_.emplace_back(grad_of(p_.embed), static_cast<size_t>(cfg_.padded_vocab() * C));
        }
        if (p_.score != nullptr) {
            accumulated_grads_.emplace_back(grad_of(p_.score), static_cast<size_t>(cfg_.num_labels * C));
        }
    }
    // Views of what a mode lacks stay null (bf16 weights in fp32, say), layer by layer.
    ph_.layers.resize(cfg_.n_layer);
    g_.layers.resize(cfg_.n_layer);
    rope_inv_freq(inv_freq_.data(), cfg_.head_size(), cfg_.rope_theta,
                  cfg_.rope_scaling ? &*cfg_.rope_scaling : nullptr);
}

void Llama::bind_frozen() {
    frozen_layout_ = llama_param_layout(cfg_, false);
    if (precision_ == Precision::Fp32) {
        frozen32_ = AlignedBuffer<float>(frozen_layout_.total());
        p_ = bind_llama_params(cfg_, frozen_layout_, frozen32_.data());
    } else {
        // bf16 only; the norms' gains (fp32 kernels read them) keep a small fp32 copy.
        frozen16_ = AlignedBuffer<uint16_t>(frozen_layout_.total());
        ph_ = bind_llama_params(cfg_, frozen_layout_, std::as_const(frozen16_).data());
        for (const ParamSpec& s : frozen_layout_.specs()) {
            if (s.shape.size() == 1) norms_layout_.add(s.name, s.shape);
        }
        norms32_ = AlignedBuffer<float>(norms_layout_.total());
        const auto at = [&](const std::string& name) { return norms32_.data() + norms_layout_.find(name).offset; };
        p_.layers.resize(cfg_.n_layer);
        for (int64_t l = 0; l < cfg_.n_layer; l++) {
            p_.layers[l].input_norm = at(fmt::format("model.layers.{}.input_layernorm.weight", l));
            p_.layers[l].post_norm = at(fmt::format("model.layers.{}.post_attention_layernorm.weight", l));
        }
        p_.norm = at("model.norm.weight");
    }
    g_.layers.resize(cfg_.n_layer);
    if (cfg_.num_labels > 0) {
        p_.score = params_.data() + layout_.find(kLoraScore).offset;
        g_.score = grads_.fp32().data() + layout_.find(kLoraScore).offset;
    }
}

void Llama::bind_adapters() {
    const int64_t C = cfg_.n_embd, KV = cfg_.kv_width(), I = cfg_.intermediate, W = cfg_.qkv_width();
    // Where each target's output lies in its layer's (possibly fused) output rows.
    const int64_t offset[kLoraTargets] = {0, C, C + KV, 0, 0, I, 0};
    const int64_t stride[kLoraTargets] = {W, W, W, C, 2 * I, 2 * I, C};
    adapters_.resize(cfg_.n_layer);
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        for (int t = 0; t < kLoraTargets; t++) {
            if (!lora_.targets[t]) continue;
            const auto target = static_cast<LoraTarget>(t);
            const ParamSpec& A = layout_.find(lora_tensor_name(l, target, 'A'));
            const ParamSpec& B = layout_.find(lora_tensor_name(l, target, 'B'));
            LoraAdapter& a = adapters_[l][t];
            a.A = params_.data() + A.offset;
            a.B = params_.data() + B.offset;
            if (precision_ == Precision::Bf16) {
                a.A_h = params_h_.data() + A.offset;
                a.B_h = params_h_.data() + B.offset;
            }
            a.dA = grads_.fp32().data() + A.offset;
            a.dB = grads_.fp32().data() + B.offset;
            a.in = A.shape[1];
            a.out = B.shape[0];
            a.offset = offset[t];
            a.stride = stride[t];
            a.salt = mix_seed(static_cast<uint64_t>(l), static_cast<uint64_t>(t) + 1);
        }
    }
}

std::string Llama::config_json() const {
    if (!lora_.enabled()) return cfg_.to_json();
    auto j = nlohmann::json::parse(cfg_.to_json());
    j["lora"] = {{"rank", lora_.rank}, {"alpha", lora_.alpha}, {"dropout", lora_.dropout},
                 {"targets", lora_.targets_list()}, {"base", lora_.base}};
    return j.dump();
}

void Llama::init_weights(uint64_t seed) {
    Rng rng(seed);
    if (!lora_.enabled()) {
        init_llama_params(layout_, params_.data(), rng);
    } else {
        for (const ParamSpec& s : layout_.specs()) {
            float* x = params_.data() + s.offset;
            const bool is_A = s.name.find(".lora_A.") != std::string::npos;
            const bool is_B = s.name.find(".lora_B.") != std::string::npos;
            std::fill_n(x, s.reserved, 0.0f);
            const float bound = 1.0f / std::sqrt(static_cast<float>(s.shape.back()));
            for (int64_t i = 0; is_A && i < s.numel; i++) {
                x[i] = bound * (2.0f * static_cast<float>(rng.next_u64() >> 40) / 16777216.0f - 1.0f);
            }
            if (!is_A && !is_B) rng.fill_normal(x, s.numel, 0.0f, 0.02f);  // the classifier
        }
    }
    weights_changed();
}

void Llama::load_base(const std::string& path) {
    if (!lora_.enabled()) throw Error("Llama::load_base without LoRA");
    const SafetensorsReader file(path);
    for (const ParamSpec& s : frozen_layout_.specs()) {
        if (precision_ == Precision::Fp32) {
            read_frozen(file, s, frozen32_.data() + s.offset);
        } else {
            read_frozen(file, s, frozen16_.data() + s.offset);
            if (s.shape.size() == 1) read_frozen(file, s, norms32_.data() + norms_layout_.find(s.name).offset);
        }
    }
}

void Llama::init_base(uint64_t seed) {
    if (!lora_.enabled()) throw Error("Llama::init_base without LoRA");
    // Uniform with init_weights's standard deviation (0.02), from a hash of (seed, tensor,
    // element): every element on its own, so all threads draw, straight into the base's
    // precision. Normals from the sequential stream took 10 of the 23 s that `bench --model
    // llama-1b --lora 16` ran; a benchmark's speed and memory do not depend on the shape of
    // the distribution.
    const float bound = 0.02f * std::sqrt(3.0f);
    const std::vector<ParamSpec>& specs = frozen_layout_.specs();
    for (size_t k = 0; k < specs.size(); k++) {
        const ParamSpec& s = specs[k];
        const uint64_t key = mix_seed(seed, k);
        const bool gain = s.shape.size() == 1;
        float* norms = gain && precision_ == Precision::Bf16 ? norms32_.data() + norms_layout_.find(s.name).offset
                                                             : nullptr;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < s.reserved; i++) {
            const float u = static_cast<float>(mix_seed(key, static_cast<uint64_t>(i)) >> 40) * 0x1.0p-24f;
            const float x = i >= s.numel ? 0.0f : (gain ? 1.0f : bound * (2.0f * u - 1.0f));  // padding rows: 0
            if (precision_ == Precision::Fp32) frozen32_[s.offset + i] = x;
            if (precision_ == Precision::Bf16) frozen16_[s.offset + i] = to_bf16(x);
            if (norms != nullptr && i < s.numel) norms[i] = x;
        }
    }
}

std::unique_ptr<Llama> Llama::merged(backend::Gemm& gemm) const {
    auto m = std::make_unique<Llama>(cfg_, gemm);
    copy_frozen_into(*m);
    fold_adapters_into(*m, gemm);
    m->weights_changed();
    return m;
}

void Llama::copy_frozen_into(Llama& m) const {
    float* out = m.params().data();
    for (const ParamSpec& s : m.layout().specs()) {
        float* dst = out + s.offset;
        if (s.name == "score.weight") {  // the classifier trained beside the adapters
            std::copy_n(params_.data() + layout_.find(kLoraScore).offset, s.numel, dst);
            continue;
        }
        const int64_t at = frozen_layout_.find(s.name).offset;
        for (int64_t i = 0; i < s.reserved; i++) {
            dst[i] = frozen32_.size() > 0 ? frozen32_[at + i] : from_bf16(frozen16_[at + i]);
        }
        if (s.shape.size() == 1 && norms32_.size() > 0) {  // the gains' exact fp32 values
            std::copy_n(norms32_.data() + norms_layout_.find(s.name).offset, s.numel, dst);
        }
    }
}

void Llama::fold_adapters_into(Llama& m, backend::Gemm& gemm) const {
    // W (out, in) += scaling · B (out, r) · A (r, in), at the target's rows of the fused matrix.
    const LlamaParams& w = m.p_;
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        const LlamaLayerWeights<float*>& b = w.layers[l];
        float* base[kLoraTargets] = {b.qkv, b.qkv, b.qkv, b.o_proj, b.gate_up, b.gate_up, b.down_proj};
        for (int t = 0; t < kLoraTargets; t++) {
            const LoraAdapter& a = adapters_[l][t];
            if (!a.on()) continue;
            std::vector<float> scaled_B(a.B, a.B + a.out * lora_.rank);
            for (float& b : scaled_B) b *= static_cast<float>(lora_.scaling());
            gemm.run({.M = a.out, .N = a.in, .K = lora_.rank, .accumulate = true}, scaled_B.data(), a.A,
                     base[t] + a.offset * a.in);
        }
    }
}

void Llama::plan_body(int64_t B, int64_t T) {
    acts_ = plan_llama_acts(cfg_, B, T, precision_, recompute_, lora_, arena_);
    rope_tables(acts_.rope_cos, acts_.rope_sin, inv_freq_.data(), cfg_.head_size(), 0, T);
}

Llama::HeadIo Llama::head_io() const {
    const bool tied = cfg_.tie_embeddings;
    return {acts_.lnf, acts_.lnf_h, acts_.dln, tied ? p_.embed : p_.lm_head, tied ? ph_.embed : ph_.lm_head, p_.score};
}

Llama::HeadGrads Llama::head_grads() {
    if (lora_.enabled()) return {nullptr, g_.score};  // the head matrix is frozen
    // The head matrix is too large for the bf16 gradients' window: written in bf16 directly.
    const float* w = cfg_.tie_embeddings ? p_.embed : p_.lm_head;
    return {w != nullptr ? grad_out(w) : kernels::GradOut(), p_.score != nullptr ? grad_of(p_.score) : nullptr};
}

void Llama::open_head_grads() {
    // The final norm's (and a classifier's) gradients; an untied head matrix's are bf16 directly.
    const int64_t end = p_.lm_head != nullptr ? p_.lm_head - params_.data() : layout_.total();
    if (!lora_.enabled()) open_grads(block_begin_.back(), end);
}

int64_t Llama::grad_window() const {
    if (lora_.enabled()) return 0;  // the adapters' gradients are small: kept in fp32
    const int64_t head = (p_.lm_head != nullptr ? p_.lm_head - params_.data() : layout_.total()) - block_begin_.back();
    int64_t widest = head;
    for (size_t l = 0; l + 1 < block_begin_.size(); l++) {
        widest = std::max(widest, block_begin_[l + 1] - block_begin_[l]);
    }
    return widest;
}

LlamaLayerWeights<float*> Llama::layer_grads(int64_t l) {
    if (lora_.enabled()) return {};
    const LlamaLayerWeights<float*>& w = p_.layers[l];
    return {grad_of(w.input_norm), grad_of(w.qkv),     grad_of(w.o_proj),
            grad_of(w.post_norm),  grad_of(w.gate_up), grad_of(w.down_proj)};
}

float* Llama::norm_grad() { return lora_.enabled() ? nullptr : grad_of(p_.norm); }

kernels::GradOut Llama::embed_grad() { return lora_.enabled() ? kernels::GradOut() : grad_out(p_.embed); }

void Llama::head_matrix_untouched() {
    // A classifier has no LM head matrix (and the embedding's gradient is zeroed with the
    // accumulated ones); a language model's is the embedding (tied) or lm_head, unless frozen.
    if (cfg_.num_labels == 0) head_grads().dw.zero(cfg_.padded_vocab() * cfg_.n_embd);
}

void Llama::linear(float* out, const float* inp, const uint16_t* inp_h, const float* w, const uint16_t* w_h,
                   int64_t N, int64_t C, int64_t OC) {
    if (precision_ == Precision::Fp32) {
        linear_forward(gemm_, out, inp, w, nullptr, N, C, OC);
    } else {
        linear_forward_bf16(gemm_, out, inp_h, w_h, nullptr, N, C, OC);
    }
    lap("matmul_fwd");
}

void Llama::linear_backward(float* dinp, float* dw, const float* dout, const float* inp, const uint16_t* inp_h,
                            const float* w, const uint16_t* w_h, int64_t N, int64_t C, int64_t OC, WeightGrad mode,
                            bool add_to_dinp) {
    if (precision_ == Precision::Bf16 && dout != nullptr) to_bf16(acts_.dout_h, dout, N * OC);
    if (add_to_dinp) {  // onto the adapters' share: a frozen weight has no gradient
        if (dw != nullptr) throw Error("Llama::linear_backward adds to dinp for a weight that trains");
        const backend::GemmShape product{.M = N, .N = C, .K = OC, .accumulate = true};
        if (precision_ == Precision::Fp32) {
            gemm_.run(product, dout, w, dinp);
        } else {
            gemm_.run_bf16(product, acts_.dout_h, w_h, dinp);
        }
    } else if (precision_ == Precision::Fp32) {
        kernels::linear_backward(gemm_, dinp, dw, nullptr, dout, inp, w, N, C, OC, mode);
    } else {
        linear_backward_bf16(gemm_, dinp, dw, nullptr, nullptr, acts_.dout_h, inp_h, w_h, N, C, OC, mode);
    }
    lap("matmul_bwd");
}

void Llama::norm_backward(float* dweight, const float* inp, const float* weight, const float* rstd,
                          bool projection_below) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    if (precision_ == Precision::Bf16 && projection_below) {
        rmsnorm_backward(acts_.dres, acts_.dout_h, dweight, acts_.dln, inp, weight, rstd, N, C);
    } else {
        rmsnorm_backward(acts_.dres, dweight, acts_.dln, inp, weight, rstd, N, C);
    }
    lap("rmsnorm_bwd");
}

const float* Llama::fp32_dout(const float* dout) const { return precision_ == Precision::Fp32 ? dout : nullptr; }

const float* Llama::residual_dout() const { return fp32_dout(acts_.dres); }

void Llama::norm(float* out, uint16_t* out_h, float* rstd, const float* weight, float* res, const float* a,
                 const float* b) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    const auto eps = static_cast<float>(cfg_.rms_norm_eps);
    const bool half = precision_ == Precision::Bf16;
    if (b == nullptr && half) rmsnorm_forward(out_h, rstd, a, weight, N, C, eps);
    if (b == nullptr && !half) rmsnorm_forward(out, rstd, a, weight, N, C, eps);
    if (b != nullptr && half) residual_rmsnorm_forward(res, out_h, rstd, a, b, weight, N, C, eps);
    if (b != nullptr && !half) residual_rmsnorm_forward(res, out, rstd, a, b, weight, N, C, eps);
    lap("rmsnorm_fwd");
}

LoraPass Llama::lora_pass() const {
    // Dropout in training passes only: evaluation and sampling see the whole adapter.
    const bool drop = training_ && lora_.dropout > 0.0;
    return {gemm_,
            precision_,
            B_ * T_,
            lora_.rank,
            static_cast<float>(lora_.scaling()),
            static_cast<float>(lora_.dropout),
            drop ? acts_.lora_keys : nullptr,
            {acts_.lora_du, acts_.lora_u_h, acts_.lora_x, acts_.lora_x_h, acts_.lora_dBt, acts_.lora_A, acts_.lora_A_h,
             acts_.lora_dA}};
}

LoraGroup Llama::adapter_group(int64_t l, LoraTarget first, LoraTarget last) const {
    LoraGroup g;
    for (int t = static_cast<int>(first); t <= static_cast<int>(last); t++) {
        if (adapters_[l][t].on()) g.add(adapters_[l][t]);
    }
    return g;
}

void Llama::adapters_forward(int64_t l, LoraTarget first, LoraTarget last, float* y, const float* x,
                             const uint16_t* x_h) {
    if (!lora_.enabled()) return;
    const LoraGroup g = adapter_group(l, first, last);
    if (g.size > 0) lora_forward(lora_pass(), g, y, x, x_h, acts_.layers[l].lora_us[static_cast<int>(first)]);
    lap("lora_fwd");
}

bool Llama::adapters_backward(int64_t l, LoraTarget first, LoraTarget last, float* dx, const float* dy,
                              const uint16_t* dy_h, const float* x, const uint16_t* x_h) {
    if (!lora_.enabled()) return false;
    const LoraGroup g = adapter_group(l, first, last);
    if (g.size > 0) {
        lora_backward(lora_pass(), g, dx, false, dy, dy_h, x, x_h, acts_.layers[l].lora_us[static_cast<int>(first)]);
    }
    lap("lora_bwd");
    return g.size > 0;
}

void Llama::attention_branch(int64_t l, const float* residual) {
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd, W = cfg_.qkv_width();
    const LlamaLayerActs& a = acts_.layers[l];
    linear(a.qkv, a.ln1, a.ln1_h, p_.layers[l].qkv, ph_.layers[l].qkv, N, C, W);
    adapters_forward(l, LoraTarget::Q, LoraTarget::V, a.qkv, a.ln1, a.ln1_h);
    // q's and k's heads are the first NH + NKV heads of each row.
    const int64_t NH = cfg_.n_head, NKV = cfg_.n_kv_head, HS = cfg_.head_size();
    if (precision_ == Precision::Fp32) {
        rope_forward(a.qkv, acts_.rope_cos, acts_.rope_sin, B, T, W, NH + NKV, HS);
        lap("rope_fwd");
        attention_forward(a.atty, a.att_lse, a.qkv, B, T, C, NH, NKV, {}, attention_math());
    } else {  // rotated and rounded into the bf16 qkv that is kept
        rope_forward(a.qkv_h, a.qkv, acts_.rope_cos, acts_.rope_sin, B, T, W, NH + NKV, HS);
        lap("rope_fwd");
        attention_forward(a.atty, a.att_lse, a.qkv_h, B, T, C, NH, NKV, {}, attention_math());
        to_bf16(a.atty_h, a.atty, N * C);
    }
    lap("attention_fwd");
    linear(acts_.proj, a.atty, a.atty_h, p_.layers[l].o_proj, ph_.layers[l].o_proj, N, C, C);
    adapters_forward(l, LoraTarget::O, LoraTarget::O, acts_.proj, a.atty, a.atty_h);
    norm(a.ln2, a.ln2_h, a.ln2_rstd, p_.layers[l].post_norm, a.res2, residual, acts_.proj);
}

void Llama::swiglu_layer(int64_t l, bool from_gemm) {
    const LlamaLayerActs& a = acts_.layers[l];
    const int64_t N = B_ * T_, I = cfg_.intermediate;
    if (precision_ == Precision::Bf16 && from_gemm) {  // gate_up's bf16 copy, kept, made on the way
        swiglu_forward(a.act_h, a.gate_up_h, a.gate_up, N, I);
    } else if (precision_ == Precision::Bf16) {
        swiglu_forward(a.act_h, a.gate_up_h, N, I);
    } else {
        swiglu_forward(a.act, a.gate_up, N, I);
    }
    lap("swiglu_fwd");
}

void Llama::mlp_up(int64_t l) {
    const int64_t N = B_ * T_, C = cfg_.n_embd, I = cfg_.intermediate;
    const LlamaLayerActs& a = acts_.layers[l];
    linear(a.gate_up, a.ln2, a.ln2_h, p_.layers[l].gate_up, ph_.layers[l].gate_up, N, C, 2 * I);
    adapters_forward(l, LoraTarget::Gate, LoraTarget::Up, a.gate_up, a.ln2, a.ln2_h);
}

void Llama::mlp_branch(int64_t l) {
    const int64_t N = B_ * T_, C = cfg_.n_embd, I = cfg_.intermediate;
    const LlamaLayerActs& a = acts_.layers[l];
    mlp_up(l);
    swiglu_layer(l, true);
    linear(acts_.proj, a.act, a.act_h, p_.layers[l].down_proj, ph_.layers[l].down_proj, N, I, C);
    adapters_forward(l, LoraTarget::Down, LoraTarget::Down, acts_.proj, a.act, a.act_h);
}

void Llama::forward_body(const int32_t* inputs) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    if (p_.embed != nullptr) {
        token_embedding_forward(acts_.embedded, inputs, p_.embed, N, C);
    } else {  // LoRA's bf16 base
        token_embedding_forward(acts_.embedded, inputs, ph_.embed, N, C);
    }
    lap("embedding_fwd");
    if (lora_.enabled() && training_ && lora_.dropout > 0.0) {
        lora_row_keys(acts_.lora_keys, lora_.seed, step_, inputs, B_, T_);
    }
    // Each residual add is fused with the RMSNorm that reads its result: the next block's
    // input norm or, after the last block, the final norm.
    const auto next_norm = [&](int64_t l, float* res, const float* a, const float* b) {
        if (l < cfg_.n_layer) {
            const LlamaLayerActs& n = acts_.layers[l];
            norm(n.ln1, n.ln1_h, n.ln1_rstd, p_.layers[l].input_norm, res, a, b);
        } else {
            norm(acts_.lnf, acts_.lnf_h, acts_.lnf_rstd, p_.norm, res, a, b);
        }
    };
    next_norm(0, nullptr, acts_.embedded, nullptr);
    const float* residual = acts_.embedded;
    for (int64_t l = 0; l < cfg_.n_layer; l++) {
        const LlamaLayerActs& a = acts_.layers[l];
        attention_branch(l, residual);
        mlp_branch(l);
        next_norm(l + 1, a.res3, a.res2, acts_.proj);
        residual = a.res3;
    }
}

void Llama::recompute_block(int64_t l, const float* residual) {
    // The last block's activations are still in the shared buffers: nothing ran after it.
    if (recompute_ == Recompute::None || l == cfg_.n_layer - 1) return;
    const LlamaLayerActs& a = acts_.layers[l];
    const LlamaLayerWeights<float*>& w = p_.layers[l];
    norm(a.ln1, a.ln1_h, a.ln1_rstd, w.input_norm, nullptr, residual, nullptr);  // as the fused pass computes it
    if (recompute_ == Recompute::Block) {
        attention_branch(l, residual);
        mlp_up(l);
    } else {  // Gelu: the pointwise outputs only
        norm(a.ln2, a.ln2_h, a.ln2_rstd, w.post_norm, nullptr, a.res2, nullptr);
    }
    swiglu_layer(l, recompute_ == Recompute::Block);
    lap("recompute");
}

void Llama::mlp_backward(int64_t l, WeightGrad mode) {
    const int64_t N = B_ * T_, C = cfg_.n_embd, I = cfg_.intermediate;
    const LlamaLayerWeights<float*>& w = p_.layers[l];
    const LlamaLayerWeights<const uint16_t*>& wh = ph_.layers[l];
    const LlamaLayerWeights<float*> dw = layer_grads(l);
    const LlamaLayerActs& a = acts_.layers[l];
    // The adapters write each input's gradient first, the frozen weight's product adds to it:
    // one pass over it fewer than adding theirs after.
    bool adapted = adapters_backward(l, LoraTarget::Down, LoraTarget::Down, acts_.dact, acts_.dres, acts_.dout_h,
                                     a.act, a.act_h);
    linear_backward(acts_.dact, dw.down_proj, residual_dout(), a.act, a.act_h, w.down_proj, wh.down_proj, N, I, C,
                    mode, adapted);
    if (precision_ == Precision::Fp32) {
        swiglu_backward(acts_.dgate_up, acts_.dact, a.gate_up, N, I);
    } else {  // the GEMMs read the gradient in bf16: SwiGLU's backward writes it so at once
        swiglu_backward(acts_.dout_h, acts_.dact, a.gate_up_h, N, I);
    }
    lap("swiglu_bwd");
    adapted = adapters_backward(l, LoraTarget::Gate, LoraTarget::Up, acts_.dln, acts_.dgate_up, acts_.dout_h, a.ln2,
                                a.ln2_h);
    linear_backward(acts_.dln, dw.gate_up, fp32_dout(acts_.dgate_up), a.ln2, a.ln2_h, w.gate_up, wh.gate_up, N,
                    C, 2 * I, mode, adapted);
    norm_backward(dw.post_norm, a.res2, w.post_norm, a.ln2_rstd, true);
}

void Llama::attention_backward_layer(int64_t l, const float* residual, WeightGrad mode) {
    const int64_t B = B_, T = T_, N = B * T, C = cfg_.n_embd, W = cfg_.qkv_width();
    const LlamaLayerWeights<float*>& w = p_.layers[l];
    const LlamaLayerWeights<const uint16_t*>& wh = ph_.layers[l];
    const LlamaLayerWeights<float*> dw = layer_grads(l);
    const LlamaLayerActs& a = acts_.layers[l];
    bool adapted = adapters_backward(l, LoraTarget::O, LoraTarget::O, acts_.datty, acts_.dres, acts_.dout_h, a.atty,
                                     a.atty_h);
    linear_backward(acts_.datty, dw.o_proj, residual_dout(), a.atty, a.atty_h, w.o_proj, wh.o_proj, N, C, C, mode,
                    adapted);
    if (precision_ == Precision::Fp32) {
        attention_backward(acts_.dqkv, acts_.datty, a.atty, a.att_lse, a.qkv, B, T, C, cfg_.n_head, cfg_.n_kv_head,
                           {}, attention_math());
    } else {
        attention_backward(acts_.dqkv, acts_.datty, a.atty, a.att_lse, a.qkv_h, B, T, C, cfg_.n_head,
                           cfg_.n_kv_head, {}, attention_math());
    }
    lap("attention_bwd");
    rope_backward(acts_.dqkv, acts_.rope_cos, acts_.rope_sin, B, T, W, cfg_.n_head + cfg_.n_kv_head,
                  cfg_.head_size());
    if (precision_ == Precision::Bf16) to_bf16(acts_.dout_h, acts_.dqkv, N * W);  // the adapters read it so too
    lap("rope_bwd");
    // Under LoRA the embedding is frozen: nothing reads the first block's input gradient.
    const bool input_grad = l > 0 || !lora_.enabled();
    float* dln = input_grad ? acts_.dln : nullptr;
    adapted = adapters_backward(l, LoraTarget::Q, LoraTarget::V, dln, acts_.dqkv, acts_.dout_h, a.ln1, a.ln1_h);
    if (dln == nullptr && dw.qkv == nullptr) return;
    linear_backward(dln, dw.qkv, fp32_dout(acts_.dqkv), a.ln1, a.ln1_h, w.qkv, wh.qkv, N, C, W, mode, adapted);
    if (input_grad) norm_backward(dw.input_norm, residual, w.input_norm, a.ln1_rstd, l > 0);
}

void Llama::backward_body(WeightGrad mode) {
    const int64_t N = B_ * T_, C = cfg_.n_embd;
    const bool hooks = !lora_.enabled();
    const float* last = cfg_.n_layer > 0 ? acts_.layers.back().res3 : acts_.embedded;
    zero(acts_.dres, N * C);
    norm_backward(norm_grad(), last, p_.norm, acts_.lnf_rstd, cfg_.n_layer > 0);
    if (hooks) grads_ready(block_begin_.back(), layout_.total());
    // acts_.dres holds d(loss)/d(block output); each block adds its branches' gradients to it.
    for (int64_t l = cfg_.n_layer - 1; l >= 0; l--) {
        const float* residual = l > 0 ? acts_.layers[l - 1].res3 : acts_.embedded;
        if (hooks) open_grads(block_begin_[l], block_begin_[l + 1]);
        recompute_block(l, residual);
        mlp_backward(l, mode);
        attention_backward_layer(l, residual, mode);
        if (hooks) grads_ready(block_begin_[l], block_begin_[l + 1]);
    }
    const kernels::GradOut dembed = embed_grad();
    if (dembed.f32 != nullptr) token_embedding_backward(dembed.f32, acts_.dres, inputs_, N, C);
    if (dembed.bf16 != nullptr) {
        // Only added to here: zeroed first unless accumulating, or the LM head (tied) wrote it.
        const bool overwrite = mode_for(dembed, mode) == WeightGrad::Overwrite;
        if (overwrite && embed_only_added()) dembed.zero(cfg_.padded_vocab() * C);
        token_embedding_backward(dembed.bf16, acts_.dres, inputs_, N, C);
    }
    lap("embedding_bwd");
    grads_ready(0, hooks ? block_begin_.front() : layout_.total());
}

}  // namespace lmforge
