// After expect_backward, GPT-2's forward computes the LM head's gradients itself (training's
// one pass over row blocks) and backward skips the head; so does BERT's forward_mlm for its
// decoder (with a bias, on the masked rows). That must change only where the work happens:
// the losses equal, and every gradient matches the plain forward + backward to rounding, over
// accumulated micro-steps, with ignored targets (the gathered head) and in both precisions.
// The profile shows which path ran, so a silently ignored promise fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/gemm.h"
#include "core/error.h"
#include "core/profiler.h"
#include "core/rng.h"
#include "kernels/crossentropy.h"
#include "model/bert.h"
#include "model/gpt2.h"
#include "test_util.h"

namespace lmforge {
namespace {

const Gpt2Config kConfig{2, 2, 32, 61, 48};
constexpr int64_t kB = 4, kT = 48;  // 192 rows: the head's blocks take 96, so two per pass

struct StepResult {
    std::vector<float> losses, token_losses, grads;
    std::vector<double> correct;  // BERT: masked positions predicted right, per micro-step
    std::vector<std::string> phases;
};

bool has_phase(const StepResult& r, const std::string& name) {
    return std::find(r.phases.begin(), r.phases.end(), name) != r.phases.end();
}

StepResult train_step(Precision precision, bool promise) {
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    Gpt2 model(kConfig, *gemm, precision, Recompute::None);
    model.init_weights(3);
    model.plan(kB, kT);
    Profiler profiler;
    model.set_profiler(&profiler);
    Rng rng(5);
    std::vector<int32_t> inputs(kB * kT), targets(kB * kT);
    StepResult r;
    model.zero_grad();
    for (int micro = 0; micro < 2; micro++) {  // the second adds to the first's gradients
        for (auto& t : inputs) t = static_cast<int32_t>(rng.below(kConfig.vocab_size));
        for (auto& t : targets) t = static_cast<int32_t>(rng.below(kConfig.vocab_size));
        // The second micro-step ignores its first half: the head runs on gathered rows.
        if (micro == 1) std::fill_n(targets.begin(), kB * kT / 2, kernels::kIgnoreIndex);
        if (promise) model.expect_backward(0.5f);
        r.losses.push_back(model.forward(inputs.data(), targets.data()));
        r.token_losses.insert(r.token_losses.end(), model.token_losses(), model.token_losses() + kB * kT);
        model.backward(0.5f);
    }
    r.grads.assign(model.grads().begin(), model.grads().end());
    for (const auto& [name, seconds] : profiler.totals()) r.phases.push_back(name);
    return r;
}

// BERT with its MLM head: masked positions only through the decoder, as the MLM trainer
// does, and a padded last sequence.
StepResult bert_train_step(Precision precision, bool promise) {
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    BertConfig cfg;
    cfg.n_layer = 2;
    cfg.n_head = 2;
    cfg.hidden = 32;
    cfg.intermediate = 128;
    cfg.vocab_size = 97;
    cfg.max_position = kT;
    Bert model(cfg, *gemm, precision);
    model.init_weights(3);
    model.plan(kB, kT);
    Profiler profiler;
    model.set_profiler(&profiler);
    Rng rng(5);
    std::vector<int32_t> inputs(kB * kT), targets(kB * kT), lengths(kB, kT);
    lengths[kB - 1] = kT / 2;
    StepResult r;
    model.zero_grad();
    for (int micro = 0; micro < 2; micro++) {
        for (int64_t i = 0; i < kB * kT; i++) {
            inputs[i] = static_cast<int32_t>(rng.below(cfg.vocab_size));
            // Half the real positions, so that the decoder's rows (about 80) span two blocks.
            const bool masked = rng.below(100) < 50 && i % kT < lengths[i / kT];
            targets[i] = masked ? static_cast<int32_t>(rng.below(cfg.vocab_size)) : kernels::kIgnoreIndex;
        }
        if (promise) model.expect_backward(0.5f);
        r.losses.push_back(model.forward_mlm(inputs.data(), lengths.data(), targets.data()));
        r.correct.push_back(static_cast<double>(model.mlm_correct()));  // from the kernels' row maxima
        model.backward(0.5f);
    }
    r.grads.assign(model.grads().begin(), model.grads().end());
    for (const auto& [name, seconds] : profiler.totals()) r.phases.push_back(name);
    return r;
}

// Both paths ran as the promise says; losses and gradients agree.
void expect_same_step(const StepResult& plain, const StepResult& promised, Precision precision) {
    EXPECT_TRUE(has_phase(plain, "lm_head_loss_bwd"));
    EXPECT_FALSE(has_phase(plain, "lm_head_loss_fwd_bwd"));
    EXPECT_TRUE(has_phase(promised, "lm_head_loss_fwd_bwd"));
    EXPECT_FALSE(has_phase(promised, "lm_head_loss_bwd"));
    EXPECT_TRUE(test::close(promised.losses, plain.losses, 1e-5, 1e-6));
    EXPECT_TRUE(test::close(promised.token_losses, plain.token_losses, 1e-5, 1e-5));
    EXPECT_EQ(promised.correct, plain.correct);
    // Blocks of rows against chunks of vocabulary: the same sums in another order. In bf16 a
    // dlogit near a rounding boundary may round the other way (2⁻⁸ of itself).
    const double tol = precision == Precision::Fp32 ? 1e-4 : 2e-2;
    const double scale = test::max_abs(std::span<const float>(plain.grads));
    EXPECT_TRUE(test::close(promised.grads, plain.grads, tol, tol * 1e-2 * scale));
}

class ExpectBackwardTest : public ::testing::TestWithParam<Precision> {};

TEST_P(ExpectBackwardTest, HeadGradientsInForwardMatchBackwardsRecompute) {
    expect_same_step(train_step(GetParam(), false), train_step(GetParam(), true), GetParam());
}

TEST_P(ExpectBackwardTest, BertDecoderGradientsInForwardMatchBackwardsRecompute) {
    expect_same_step(bert_train_step(GetParam(), false), bert_train_step(GetParam(), true), GetParam());
}

TEST_P(ExpectBackwardTest, BackwardWithAnotherScaleThanPromisedThrows) {
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    Gpt2 model(kConfig, *gemm, GetParam(), Recompute::None);
    model.init_weights(3);
    model.plan(1, 8);
    const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    model.zero_grad();
    model.expect_backward(0.25f);
    model.forward(tokens.data(), tokens.data());
    EXPECT_THROW(model.backward(1.0f), Error);
}

INSTANTIATE_TEST_SUITE_P(Precisions, ExpectBackwardTest, ::testing::Values(Precision::Fp32, Precision::Bf16),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

}  // namespace
}  // namespace lmforge
