// The whole model against PyTorch (tools/gpt2_reference.py via tools/make_goldens.py): logits,
// loss and every parameter's gradient for one batch, then 10 AdamW steps with clipping; in
// fp32, bf16 and fp16 (GEMM inputs rounded, the steps under loss scaling).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend/gemm.h"
#include "model/fp16_gemm.h"
#include "distributed/comm_single.h"
#include "distributed/data_parallel.h"
#include "io/safetensors.h"
#include "model/gpt2.h"
#include "optim/adamw.h"
#include "train/train_step.h"
#include "test_util.h"

namespace lmforge::test {
namespace {

struct Tolerances {
    double loss_rtol;
    double tensor_tol;  // relative to each element and to the tensor's max
    double step_loss_rtol;  // each of the 10 steps
    double grad_norm_rtol;
};

// fp32 against fp32 PyTorch: the two differ only by summation order.
constexpr Tolerances kFp32{1e-5, 1e-4, 1e-5, 1e-4};
// Mixed precision against the same fp32 PyTorch: every GEMM input is rounded to bf16 (8
// significant bits, a relative error up to 2^-9 ≈ 2e-3 per element), and these errors add up
// along the chain of layers and through backward. Measured: 2e-3 of the max on logits, 6e-3
// on the worst gradient, 5e-5 on the step losses, 1.3e-3 on the gradient norms; the bounds
// leave room for that, and still catch a wrong kernel (errors of order 1) or a stale bf16
// weight copy.
constexpr Tolerances kBf16{1e-3, 2e-2, 1e-3, 1e-2};
// fp16 GEMM inputs (11 significant bits: 2^-12 ≈ 2.4e-4 per element, 8x finer than bf16's),
// the steps under a loss scale of 2^16 that AdamW divides out again. Measured: 2.8e-4 of the
// max on logits, 1.0e-3 on the worst gradient, 7e-6 on the step losses, 1.5e-4 on the norms.
constexpr Tolerances kFp16{2e-4, 4e-3, 2e-4, 2e-3};

// How the model computes: its precision, and for fp16 the GEMM that rounds inputs to fp16;
// Bf16Grads is bf16 with the gradients kept in bf16 (the same tolerances).
enum class Mode { Fp32, Bf16, Fp16, Bf16Grads };
const char* mode_name(Mode m) {
    const char* names[] = {"fp32", "bf16", "fp16", "bf16_grads"};
    return names[static_cast<int>(m)];
}
std::unique_ptr<backend::Gemm> gemm_for(Mode m) {
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    if (m == Mode::Fp16) return std::make_unique<Fp16InputGemm>(std::move(gemm));
    return gemm;
}

// A fixture file, and the model it describes with the fixture's weights loaded by Hugging
// Face name, planned for the fixture's batch.
struct Golden {
    SafetensorsReader file;
    nlohmann::json meta;
    Gpt2Config cfg;
    int64_t B, T;
    std::vector<int32_t> inputs, targets;
    std::unique_ptr<backend::Gemm> gemm;
    Gpt2 model;

    Golden(const std::string& name, Mode mode)
        : file(std::string(LMFORGE_FIXTURES_DIR) + "/gpt2_" + name + ".safetensors"),
          meta(nlohmann::json::parse(file.metadata().at("config"))),
          cfg{meta["n_layer"], meta["n_head"], meta["n_embd"], meta["vocab_size"], meta["block_size"]},
          B(meta["B"]),
          T(meta["T"]),
          inputs(file.read_i32("inputs")),
          targets(file.read_i32("targets")),
          gemm(gemm_for(mode)),
          model(cfg, *gemm, mode == Mode::Bf16 || mode == Mode::Bf16Grads ? Precision::Bf16 : Precision::Fp32) {
        if (mode == Mode::Bf16Grads) model.keep_grads_in_bf16();
        for (const ParamSpec& s : model.layout().specs()) {
            file.read("param/" + s.name, model.params().subspan(s.offset, s.numel));
        }
        model.plan(B, T);
        model.weights_changed();
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

class Gpt2Golden : public ::testing::TestWithParam<std::tuple<std::string, Mode>> {
protected:
    const std::string& fixture() const { return std::get<0>(GetParam()); }
    Mode mode() const { return std::get<1>(GetParam()); }
    const Tolerances& tol() const {
        return mode() == Mode::Fp32 ? kFp32 : mode() == Mode::Fp16 ? kFp16 : kBf16;
    }
    std::string tag() const { return fixture() + " " + mode_name(mode()); }
};

TEST_P(Gpt2Golden, LogitsLossAndGradientsMatchPyTorch) {
    Golden g(fixture(), mode());
    Gpt2& model = g.model;
    // Logits come from a forward without targets (with targets, the loss is computed in
    // vocabulary chunks and the full logits never exist). They are (B·T, Vp); the fixture's
    // are (B·T, V): compare the real columns.
    Batch batch{.B = g.B, .T = g.T, .inputs = g.inputs};
    model.forward(batch);
    const int64_t V = g.cfg.vocab_size, Vp = g.cfg.padded_vocab();
    const auto want = g.file.read_f32("logits");
    std::vector<float> got(want.size());
    for (int64_t n = 0; n < g.B * g.T; n++) {
        std::copy_n(model.logits() + n * Vp, V, got.begin() + n * V);
    }
    const double logit_scale = max_abs(std::span<const float>(want));
    EXPECT_TRUE(close(got, want, tol().tensor_tol, tol().tensor_tol * logit_scale)) << "logits";
    const double logits_error = scaled_error(got, want);

    // PyTorch's loss is the mean over the counted targets: the gradient of their sum over their count.
    batch.targets = g.targets;
    const double loss = model.forward_backward(batch, 1.0f / static_cast<float>(batch.counted()), false).mean();
    EXPECT_NEAR(loss, g.file.read_f32("loss")[0], tol().loss_rtol * std::abs(loss));
    const double loss_error = std::abs(loss - g.file.read_f32("loss")[0]) / std::abs(loss);

    double grad_error = 0.0;
    const std::vector<float> grads = grads_as_floats(model);
    for (const ParamSpec& s : model.layout().specs()) {
        const auto want_grad = g.file.read_f32("grad/" + s.name);
        const auto got_grad = std::span<const float>(grads).subspan(s.offset, s.numel);
        const double scale = max_abs(std::span<const float>(want_grad));
        EXPECT_TRUE(close(std::span<const float>(got_grad), std::span<const float>(want_grad),
                          tol().tensor_tol, tol().tensor_tol * scale))
            << "gradient of " << s.name;
        grad_error = std::max(grad_error, scaled_error(got_grad, want_grad));
    }
    std::printf("[golden %s] loss rel. error %.2e (tol %.0e); logits %.2e, worst gradient %.2e "
                "of the tensor's max (tol %.0e)\n",
                tag().c_str(), loss_error, tol().loss_rtol, logits_error, grad_error, tol().tensor_tol);
    // Padding rows of the tied embedding receive no gradient.
    const ParamSpec& wte = model.layout().find("wte.weight");
    for (int64_t i = wte.numel; i < wte.reserved; i++) {
        ASSERT_EQ(grads[wte.offset + i], 0.0f) << "padding element " << i;
    }
}

TEST_P(Gpt2Golden, TenAdamWStepsWithClippingMatchPyTorch) {
    Golden g(fixture(), mode());
    Gpt2& model = g.model;
    // The trainer's own step: forward and backward, norm, clipping folded into AdamW.
    SingleCommunicator comm;
    DataParallel dp(comm, model, AdamWConfig{.weight_decay = g.meta["weight_decay"].get<float>()}, ParallelOptions{});
    const Batch batch{.B = g.B, .T = g.T, .inputs = g.inputs, .targets = g.targets};
    const auto want_losses = g.file.read_f32("step_losses");
    const auto want_norms = g.file.read_f32("step_grad_norms");
    const int steps = g.meta["steps"];
    ASSERT_EQ(want_losses.size(), static_cast<size_t>(steps));
    double worst_loss = 0.0, worst_norm = 0.0;
    for (int step = 0; step < steps; step++) {
        const StepResult r = train_step(model, dp, std::span<const Batch>(&batch, 1), g.meta["lr"].get<float>(),
                                        g.meta["grad_clip"].get<double>(), mode() == Mode::Fp16 ? 65536.0 : 1.0);
        const double loss = r.loss.mean(), norm = r.grad_norm;
        EXPECT_NEAR(loss, want_losses[step], tol().step_loss_rtol * want_losses[step]) << "step " << step;
        EXPECT_NEAR(norm, want_norms[step], tol().grad_norm_rtol * want_norms[step]) << "step " << step;
        worst_loss = std::max<double>(worst_loss, std::abs(loss - want_losses[step]) / want_losses[step]);
        worst_norm = std::max(worst_norm, std::abs(norm - want_norms[step]) / want_norms[step]);
    }
    std::printf("[golden %s] %d steps: worst loss rel. error %.2e (tol %.0e), grad norm %.2e "
                "(tol %.0e)\n",
                tag().c_str(), steps, worst_loss, tol().step_loss_rtol, worst_norm, tol().grad_norm_rtol);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Gpt2Golden,
                         ::testing::Combine(::testing::Values("tiny", "odd"),
                                            ::testing::Values(Mode::Fp32, Mode::Bf16, Mode::Fp16, Mode::Bf16Grads)),
                         [](const auto& info) {
                             return std::get<0>(info.param) + "_" + mode_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace lmforge::test
