// The whole model against PyTorch (tools/gpt2_reference.py via tools/make_goldens.py): logits,
// loss and every parameter's gradient for one batch, then 10 AdamW steps with clipping.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend/gemm.h"
#include "io/safetensors.h"
#include "model/gpt2.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "test_util.h"

namespace lmforge::test {
namespace {

// fp32 against fp32 PyTorch; the two differ only by summation order.
constexpr double kLossRtol = 1e-5;
constexpr double kTensorTol = 1e-4;     // relative to each element and to the tensor's max
constexpr double kStepLossRtol = 1e-5;  // each of the 10 steps
constexpr double kGradNormRtol = 1e-4;

// A fixture file, and the model it describes with the fixture's weights loaded by Hugging
// Face name, planned for the fixture's batch.
struct Golden {
    SafetensorsReader file;
    nlohmann::json meta;
    Gpt2Config cfg;
    int64_t B, T;
    std::vector<int32_t> inputs, targets;
    std::unique_ptr<backend::Gemm> gemm = backend::make_gemm(backend::GemmKind::Onednn);
    Gpt2 model;

    explicit Golden(const std::string& name)
        : file(std::string(LMFORGE_FIXTURES_DIR) + "/gpt2_" + name + ".safetensors"),
          meta(nlohmann::json::parse(file.metadata().at("config"))),
          cfg{meta["n_layer"], meta["n_head"], meta["n_embd"], meta["vocab_size"], meta["block_size"]},
          B(meta["B"]),
          T(meta["T"]),
          inputs(file.read_i32("inputs")),
          targets(file.read_i32("targets")),
          model(cfg, *gemm) {
        for (const ParamSpec& s : model.layout().specs()) {
            file.read("param/" + s.name, model.params().subspan(s.offset, s.numel));
        }
        model.plan(B, T);
    }
};

// max |got - want| / max |want|: an error on the tensor's own scale, for the report line.
double scaled_error(std::span<const float> got, std::span<const float> want) {
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); i++) {
        worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    }
    return worst / std::max(max_abs(want), 1e-30);
}

class Gpt2Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Gpt2Golden, LogitsLossAndGradientsMatchPyTorch) {
    Golden g(GetParam());
    Gpt2& model = g.model;
    const float loss = model.forward(g.inputs.data(), g.targets.data());
    EXPECT_NEAR(loss, g.file.read_f32("loss")[0], kLossRtol * std::abs(loss));

    // Logits are (B·T, Vp); the fixture's are (B·T, V): compare the real columns.
    const int64_t V = g.cfg.vocab_size, Vp = g.cfg.padded_vocab();
    const auto want = g.file.read_f32("logits");
    std::vector<float> got(want.size());
    for (int64_t n = 0; n < g.B * g.T; n++) {
        std::copy_n(model.logits() + n * Vp, V, got.begin() + n * V);
    }
    const double logit_scale = max_abs(std::span<const float>(want));
    EXPECT_TRUE(close(got, want, kTensorTol, kTensorTol * logit_scale)) << "logits";
    const double logits_error = scaled_error(got, want);
    const double loss_error = std::abs(loss - g.file.read_f32("loss")[0]) / std::abs(loss);

    model.zero_grad();
    model.backward();
    double grad_error = 0.0;
    for (const ParamSpec& s : model.layout().specs()) {
        const auto want_grad = g.file.read_f32("grad/" + s.name);
        const auto got_grad = model.grads().subspan(s.offset, s.numel);
        const double scale = max_abs(std::span<const float>(want_grad));
        EXPECT_TRUE(close(std::span<const float>(got_grad), std::span<const float>(want_grad),
                          kTensorTol, kTensorTol * scale))
            << "gradient of " << s.name;
        grad_error = std::max(grad_error, scaled_error(got_grad, want_grad));
    }
    std::printf("[golden %s] loss rel. error %.2e (tol %.0e); logits %.2e, worst gradient %.2e "
                "of the tensor's max (tol %.0e)\n",
                GetParam().c_str(), loss_error, kLossRtol, logits_error, grad_error, kTensorTol);
    // Padding rows of the tied embedding receive no gradient.
    const ParamSpec& wte = model.layout().find("wte.weight");
    for (int64_t i = wte.numel; i < wte.reserved; i++) {
        ASSERT_EQ(model.grads()[wte.offset + i], 0.0f) << "padding element " << i;
    }
}

TEST_P(Gpt2Golden, TenAdamWStepsWithClippingMatchPyTorch) {
    Golden g(GetParam());
    Gpt2& model = g.model;
    AdamW opt(model.layout(), AdamWConfig{.weight_decay = g.meta["weight_decay"].get<float>()});
    const auto want_losses = g.file.read_f32("step_losses");
    const auto want_norms = g.file.read_f32("step_grad_norms");
    const int steps = g.meta["steps"];
    ASSERT_EQ(want_losses.size(), static_cast<size_t>(steps));
    double worst_loss = 0.0, worst_norm = 0.0;
    for (int step = 0; step < steps; step++) {
        model.zero_grad();
        const float loss = model.forward(g.inputs.data(), g.targets.data());
        model.backward();
        // Clipping as training does it: the factor folded into AdamW's gradient scale.
        const double norm =
            grad_norm(model.grads().data(), static_cast<int64_t>(model.grads().size()));
        opt.step(model.params().data(), model.grads().data(), g.meta["lr"].get<float>(),
                 clip_factor(norm, g.meta["grad_clip"].get<double>()));
        EXPECT_NEAR(loss, want_losses[step], kStepLossRtol * want_losses[step]) << "step " << step;
        EXPECT_NEAR(norm, want_norms[step], kGradNormRtol * want_norms[step]) << "step " << step;
        worst_loss = std::max<double>(worst_loss, std::abs(loss - want_losses[step]) / want_losses[step]);
        worst_norm = std::max(worst_norm, std::abs(norm - want_norms[step]) / want_norms[step]);
    }
    std::printf("[golden %s] %d steps: worst loss rel. error %.2e (tol %.0e), grad norm %.2e "
                "(tol %.0e)\n",
                GetParam().c_str(), steps, worst_loss, kStepLossRtol, worst_norm, kGradNormRtol);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Gpt2Golden, ::testing::Values("tiny", "odd"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace lmforge::test
