// Llama against transformers (fixtures by tools/make_llama_fixtures.py): models saved by
// save_pretrained, imported by lmforge, must give transformers' logits, loss and the gradient
// of every tensor, its greedy generation, and its rotary frequencies; in fp32 and bf16, with
// grouped-query (2 and 1 key/value heads) and multi-head attention, tied and untied heads,
// rope_theta 10000 and 500000, and Llama 3's scaling. Export writes the same tensors back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>

#include "backend/gemm.h"
#include "checkpoint/hf_llama.h"
#include "io/safetensors.h"
#include "model/llama.h"
#include "temp_dir.h"
#include "test_util.h"
#include "train/sampler.h"

namespace lmforge::test {
namespace {

const std::string kHf = std::string(LMFORGE_FIXTURES_DIR) + "/hf/";

struct Tolerance {
    double loss_rtol, tensor_tol;
};
// fp32 against fp32 transformers: summation order only (measured: logits 6e-7, gradients 1.1e-6
// of the tensor's max). bf16 GEMM inputs against the same fp32 transformers: the fixtures'
// weights (std 0.1, to make every tensor matter) give larger products than GPT-2's, and the
// rounding of each GEMM input adds up to 1.2e-2 on logits and 2.1e-2 on the worst gradient;
// the bound leaves room for that and still catches a wrong kernel (errors of order 1).
constexpr Tolerance kFp32{1e-5, 1e-4};
constexpr Tolerance kBf16{2e-3, 5e-2};

const SafetensorsReader& expected() {
    static const SafetensorsReader file(kHf + "llama-expected.safetensors");
    return file;
}

// The fixture's model, imported as `lmforge import` does.
struct Imported {
    std::unique_ptr<backend::Gemm> gemm = backend::make_gemm(backend::GemmKind::Onednn);
    Llama model;
    Imported(const std::string& name, Precision precision)
        : model(read_hf_llama_config(kHf + name), *gemm, precision) {
        load_hf_llama_weights(model, kHf + name);
    }
};

// Checks got against want within tol of each element and of the tensor's max; returns
// max |got - want| / max |want|, for the report line.
double expect_tensor(std::span<const float> got, std::span<const float> want, double tol, const std::string& what) {
    const double scale = max_abs(want);
    EXPECT_TRUE(close(got, want, tol, tol * scale)) << what;
    double worst = 0;
    for (size_t i = 0; i < got.size(); i++) worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    return worst / std::max(scale, 1e-30);
}

class LlamaGolden : public TempDirTest, public ::testing::WithParamInterface<std::tuple<std::string, Precision>> {
protected:
    const std::string& name() const { return std::get<0>(GetParam()); }
    Precision precision() const { return std::get<1>(GetParam()); }
    const Tolerance& tol() const { return precision() == Precision::Bf16 ? kBf16 : kFp32; }
    std::vector<float> want(const std::string& key) const { return expected().read_f32(name() + "/" + key); }
};

TEST_P(LlamaGolden, LogitsLossAndGradientsMatchTransformers) {
    Imported m(name(), precision());
    const std::vector<int32_t> ids = expected().read_i32("ids");
    const int64_t B = 2, T = static_cast<int64_t>(ids.size()) / B, V = m.model.vocab_size(), Vp = m.model.padded_vocab();
    Batch batch{.B = B, .T = T, .inputs = ids};
    m.model.forward(batch);
    std::vector<float> logits(B * T * V);
    for (int64_t n = 0; n < B * T; n++) std::copy_n(m.model.logits() + n * Vp, V, logits.begin() + n * V);
    const double logits_error = expect_tensor(logits, want("logits"), tol().tensor_tol, "logits");

    batch.targets = expected().read_i32(name() + "/targets");
    const double loss = m.model.forward_backward(batch, 1.0f / static_cast<float>(batch.counted()), false).mean();
    EXPECT_NEAR(loss, want("loss")[0], tol().loss_rtol * loss);
    double grad_error = 0;
    for (const ParamSpec& s : m.model.layout().specs()) {
        grad_error = std::max(grad_error, expect_tensor(m.model.grads().subspan(s.offset, s.numel),
                                                        want("grad/" + s.name), tol().tensor_tol,
                                                        "gradient of " + s.name));
    }
    std::printf("[golden %s %s] loss rel. error %.2e; logits %.2e, worst gradient %.2e of the tensor's max\n",
                name().c_str(), precision() == Precision::Bf16 ? "bf16" : "fp32",
                std::abs(loss - want("loss")[0]) / loss, logits_error, grad_error);
}

TEST_P(LlamaGolden, RecomputeGivesTheSameGradients) {
    Imported plain(name(), precision());
    const std::vector<int32_t> ids = expected().read_i32("ids");
    const Batch batch{.B = 2, .T = static_cast<int64_t>(ids.size()) / 2, .inputs = ids,
                      .targets = expected().read_i32(name() + "/targets")};
    plain.model.forward_backward(batch, 1.0f, false);
    for (const Recompute r : {Recompute::Gelu, Recompute::Block}) {
        auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
        Llama model(plain.model.config(), *gemm, precision(), r);
        std::copy(plain.model.params().begin(), plain.model.params().end(), model.params().begin());
        model.weights_changed();
        model.forward_backward(batch, 1.0f, false);
        EXPECT_TRUE(std::equal(model.grads().begin(), model.grads().end(), plain.model.grads().begin()))
            << "recompute " << recompute_name(r);
        // Layer 0's buffers are the ones later layers share: one layer has nothing to save.
        if (model.config().n_layer > 1) {
            EXPECT_LT(model.activation_bytes(), plain.model.activation_bytes());
        }
    }
}

// Gradients kept in bf16 (model/gradients.h) against transformers at the bf16 tolerances: the
// body's rounded once from fp32 sums, the embedding and an untied head matrix in bf16 directly.
TEST(LlamaBf16Gradients, MatchTransformers) {
    for (const std::string name : {"llama-gqa", "llama-tied", "llama-mha"}) {
        Imported m(name, Precision::Bf16);
        m.model.keep_grads_in_bf16();
        const std::vector<int32_t> ids = expected().read_i32("ids");
        Batch batch{.B = 2, .T = static_cast<int64_t>(ids.size()) / 2, .inputs = ids,
                    .targets = expected().read_i32(name + "/targets")};
        const double loss = m.model.forward_backward(batch, 1.0f / static_cast<float>(batch.counted()), false).mean();
        EXPECT_NEAR(loss, expected().read_f32(name + "/loss")[0], kBf16.loss_rtol * loss) << name;
        const std::vector<float> grads = grads_as_floats(m.model);
        double grad_error = 0;
        for (const ParamSpec& s : m.model.layout().specs()) {
            grad_error = std::max(grad_error, expect_tensor(std::span<const float>(grads).subspan(s.offset, s.numel),
                                                            expected().read_f32(name + "/grad/" + s.name),
                                                            kBf16.tensor_tol, name + ": gradient of " + s.name));
        }
        std::printf("[golden %s bf16 gradients] worst gradient %.2e of the tensor's max\n", name.c_str(), grad_error);
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LlamaGolden,
                         ::testing::Combine(::testing::Values("llama-gqa", "llama-tied", "llama-mha"),
                                            ::testing::Values(Precision::Fp32, Precision::Bf16)),
                         [](const auto& info) {
                             std::string n = std::get<0>(info.param).substr(6);
                             return n + (std::get<1>(info.param) == Precision::Bf16 ? "_bf16" : "_fp32");
                         });

class LlamaFixture : public TempDirTest, public ::testing::WithParamInterface<std::string> {
protected:
    std::vector<float> want(const std::string& key) const { return expected().read_f32(GetParam() + "/" + key); }
};

TEST_P(LlamaFixture, RotaryFrequenciesMatchTransformers) {
    Imported m(GetParam(), Precision::Fp32);
    const std::vector<float> w = want("rope_inv_freq");
    for (size_t i = 0; i < w.size(); i++) EXPECT_NEAR(m.model.inv_freq()[i], w[i], 1e-7 * w[i]) << "frequency " << i;
}

TEST_P(LlamaFixture, GreedyGenerationEqualsGenerate) {
    Imported m(GetParam(), Precision::Fp32);
    const std::vector<int32_t> prompt = expected().read_i32(GetParam() + "/gen_prompt");
    const std::vector<int32_t> want_ids = expected().read_i32(GetParam() + "/gen_ids");
    const SampleOptions greedy{static_cast<int64_t>(want_ids.size() - prompt.size()), 0.0, 0, 1.0, std::nullopt};
    Rng rng(1);
    const std::unique_ptr<Decoder> decoder = m.model.decoder(*m.gemm);
    std::vector<int32_t> got = prompt;
    for (const int32_t id : generate(*decoder, prompt, greedy, rng)) got.push_back(id);
    EXPECT_EQ(got, want_ids) << "with the KV cache";
    std::vector<int32_t> full = prompt;
    for (const int32_t id : generate_without_cache(m.model, prompt, greedy, rng)) full.push_back(id);
    EXPECT_EQ(full, want_ids) << "a full forward per token";
}

TEST_P(LlamaFixture, ExportWritesTheImportedTensorsBack) {
    Imported m(GetParam(), Precision::Fp32);
    save_hf_llama(m.model, path("out"), nullptr);
    const LlamaConfig back = read_hf_llama_config(path("out"));
    EXPECT_EQ(back.to_json(), m.model.config().to_json());
    const SafetensorsReader file(path("out") + "/model.safetensors");
    for (const ParamSpec& s : m.model.layout().specs()) {
        const std::vector<float> got = file.read_f32(s.name);
        EXPECT_TRUE(std::equal(got.begin(), got.end(), m.model.params().begin() + s.offset)) << s.name;
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LlamaFixture, ::testing::Values("llama-gqa", "llama-tied", "llama-mha"),
                         [](const auto& info) { return info.param.substr(6); });

class LlamaClassifier : public ::testing::TestWithParam<Precision> {};

TEST_P(LlamaClassifier, LogitsLossAndGradientsMatchTransformers) {
    Imported m("llama-cls", GetParam());
    const Tolerance& tol = GetParam() == Precision::Bf16 ? kBf16 : kFp32;
    const std::vector<int32_t> ids = expected().read_i32("llama-cls/cls_ids");
    const int64_t B = 3, T = static_cast<int64_t>(ids.size()) / B;
    // Padding (id 0) at the ends of rows: the head reads each row's last real token.
    Batch batch{.B = B,
                .T = T,
                .inputs = ids,
                .lengths = lengths_before_padding(ids, B, T),
                .labels = expected().read_i32("llama-cls/cls_labels")};
    const double loss = m.model.forward_backward(batch, 1.0f / static_cast<float>(B), false).mean();
    EXPECT_NEAR(loss, expected().read_f32("llama-cls/cls_loss")[0], tol.loss_rtol * loss);
    expect_tensor(std::span<const float>(m.model.class_logits(), B * 3), expected().read_f32("llama-cls/cls_logits"),
                  tol.tensor_tol, "class logits");
    for (const ParamSpec& s : m.model.layout().specs()) {
        expect_tensor(m.model.grads().subspan(s.offset, s.numel), expected().read_f32("llama-cls/cls_grad/" + s.name),
                      tol.tensor_tol, "gradient of " + s.name);
    }
}

INSTANTIATE_TEST_SUITE_P(Precisions, LlamaClassifier, ::testing::Values(Precision::Fp32, Precision::Bf16),
                         [](const auto& info) { return info.param == Precision::Bf16 ? "bf16" : "fp32"; });

}  // namespace
}  // namespace lmforge::test
