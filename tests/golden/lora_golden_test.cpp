// LoRA against PyPI peft (fixtures by tools/make_lora_fixture.py): adapters of rank 4 on every
// projection of llama-gqa, and of rank 2 on q and v of the llama-cls classifier (whose head
// trains whole), with peft's values loaded into lmforge's adapters: the logits, the loss and the
// gradient of every adapter tensor (and the head) must be peft's, and the merged model's logits
// those of merge_and_unload(). In fp32 (the base frozen in fp32) and bf16 (frozen in bf16 only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "backend/gemm.h"
#include "checkpoint/hf_llama.h"
#include "io/safetensors.h"
#include "model/llama.h"
#include "test_util.h"

namespace lmforge::test {
namespace {

const std::string kHf = std::string(LMFORGE_FIXTURES_DIR) + "/hf/";

const SafetensorsReader& expected() {
    static const SafetensorsReader file(kHf + "lora-expected.safetensors");
    return file;
}

// fp32: summation order only. bf16: the base and every GEMM input rounded (as llama_golden_test).
double tolerance(Precision p) { return p == Precision::Bf16 ? 5e-2 : 1e-4; }

double worst_error(std::span<const float> got, std::span<const float> want) {
    double worst = 0;
    for (size_t i = 0; i < got.size(); i++) worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    return worst / std::max(max_abs(want), 1e-30);
}

// The fixture's base with lmforge's LoRA of the fixture's shape, peft's adapter values loaded.
struct Adapted {
    std::unique_ptr<backend::Gemm> gemm = backend::make_gemm(backend::GemmKind::Onednn);
    std::unique_ptr<Llama> model;
    Adapted(const std::string& base, const std::string& prefix, const std::string& targets, int64_t rank,
            double alpha, Precision precision, Recompute recompute = Recompute::None, double dropout = 0) {
        LoraOptions lora;
        lora.rank = rank;
        lora.alpha = alpha;
        lora.dropout = dropout;
        lora.targets = LoraOptions::parse_targets(targets);
        model = std::make_unique<Llama>(read_hf_llama_config(kHf + base), *gemm, precision, recompute, lora);
        model->load_base(kHf + base + "/model.safetensors");
        for (const ParamSpec& s : model->layout().specs()) {
            expected().read(prefix + "param/" + s.name, model->params().subspan(s.offset, s.numel));
        }
        model->weights_changed();
    }
};

class LoraGolden : public ::testing::TestWithParam<Precision> {
protected:
    double tol() const { return tolerance(GetParam()); }
    const char* tag() const { return GetParam() == Precision::Bf16 ? "bf16" : "fp32"; }
};

TEST_P(LoraGolden, CausalLogitsLossAndAdapterGradientsMatchPeft) {
    Adapted m("llama-gqa", "", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", 4, 8.0, GetParam());
    const std::vector<int32_t> ids = expected().read_i32("ids");
    const int64_t B = 2, T = static_cast<int64_t>(ids.size()) / B, V = m.model->vocab_size(),
                  Vp = m.model->padded_vocab();
    Batch batch{.B = B, .T = T, .inputs = ids};
    m.model->forward(batch);
    std::vector<float> logits(B * T * V);
    for (int64_t n = 0; n < B * T; n++) std::copy_n(m.model->logits() + n * Vp, V, logits.begin() + n * V);
    const std::vector<float> want_logits = expected().read_f32("logits");
    const double logits_error = worst_error(logits, want_logits);
    EXPECT_LE(logits_error, tol()) << "logits";

    batch.targets = expected().read_i32("targets");
    const double loss = m.model->forward_backward(batch, 1.0f / static_cast<float>(batch.counted()), false).mean();
    EXPECT_NEAR(loss, expected().read_f32("loss")[0], tol() * 0.1 * loss);
    double grad_error = 0;
    for (const ParamSpec& s : m.model->layout().specs()) {
        const double e = worst_error(m.model->grads().subspan(s.offset, s.numel), expected().read_f32("grad/" + s.name));
        EXPECT_LE(e, tol()) << "gradient of " << s.name;
        grad_error = std::max(grad_error, e);
    }
    std::printf("[lora %s] %zu adapter tensors: logits %.2e, worst gradient %.2e of the tensor's max\n", tag(),
                m.model->layout().specs().size(), logits_error, grad_error);
}

// Every recompute mode gives the adapters the gradients of keeping everything, bit for bit,
// with dropout (its masks redrawn in the recomputed forward).
TEST_P(LoraGolden, RecomputeGivesTheSameAdapterGradients) {
    const std::string all = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj";
    const std::vector<int32_t> ids = expected().read_i32("ids");
    const Batch batch{.B = 2, .T = static_cast<int64_t>(ids.size()) / 2, .inputs = ids,
                      .targets = expected().read_i32("targets")};
    Adapted kept("llama-gqa", "", all, 4, 8.0, GetParam(), Recompute::None, 0.25);
    const double loss = kept.model->forward_backward(batch, 1.0f, false).mean();
    for (const Recompute r : {Recompute::Gelu, Recompute::Block}) {
        Adapted m("llama-gqa", "", all, 4, 8.0, GetParam(), r, 0.25);
        EXPECT_EQ(m.model->forward_backward(batch, 1.0f, false).mean(), loss) << recompute_name(r);
        EXPECT_TRUE(std::equal(m.model->grads().begin(), m.model->grads().end(), kept.model->grads().begin()))
            << "recompute " << recompute_name(r);
    }
}

TEST_P(LoraGolden, MergedModelGivesMergeAndUnloadsLogits) {
    Adapted m("llama-gqa", "", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", 4, 8.0, GetParam());
    const std::unique_ptr<Llama> merged = m.model->merged(*m.gemm);
    EXPECT_FALSE(merged->adapters_only());
    const std::vector<int32_t> ids = expected().read_i32("ids");
    const int64_t B = 2, T = static_cast<int64_t>(ids.size()) / B, V = merged->vocab_size(), Vp = merged->padded_vocab();
    merged->forward(Batch{.B = B, .T = T, .inputs = ids});
    std::vector<float> logits(B * T * V);
    for (int64_t n = 0; n < B * T; n++) std::copy_n(merged->logits() + n * Vp, V, logits.begin() + n * V);
    // The merged model computes in fp32 from the store's weights: bf16's base is rounded.
    EXPECT_LE(worst_error(logits, expected().read_f32("merged_logits")), GetParam() == Precision::Bf16 ? 2e-2 : 1e-5);
}

TEST_P(LoraGolden, ClassifierWithItsHeadTrainingMatchesPeft) {
    Adapted m("llama-cls", "cls/", "q_proj,v_proj", 2, 4.0, GetParam());
    const std::vector<int32_t> ids = expected().read_i32("cls/ids");
    const int64_t B = 3, T = static_cast<int64_t>(ids.size()) / B;
    // Padding (id 0) at the ends of rows: the head reads each row's last real token.
    Batch batch{.B = B,
                .T = T,
                .inputs = ids,
                .lengths = lengths_before_padding(ids, B, T),
                .labels = expected().read_i32("cls/labels")};
    const double loss = m.model->forward_backward(batch, 1.0f / static_cast<float>(B), false).mean();
    EXPECT_NEAR(loss, expected().read_f32("cls/loss")[0], tol() * 0.1 * loss);
    EXPECT_LE(worst_error(std::span<const float>(m.model->class_logits(), B * 3), expected().read_f32("cls/logits")),
              tol());
    for (const ParamSpec& s : m.model->layout().specs()) {
        EXPECT_LE(worst_error(m.model->grads().subspan(s.offset, s.numel), expected().read_f32("cls/grad/" + s.name)),
                  tol())
            << "gradient of " << s.name;
    }
}

INSTANTIATE_TEST_SUITE_P(Precisions, LoraGolden, ::testing::Values(Precision::Fp32, Precision::Bf16),
                         [](const auto& info) { return info.param == Precision::Bf16 ? "bf16" : "fp32"; });

}  // namespace
}  // namespace lmforge::test
