// Activation recompute trades compute for memory and must change nothing else: in every mode
// and precision, the loss and every gradient are bit-identical to keeping all activations,
// and the activation arena shrinks from none to gelu to block.
#include <gtest/gtest.h>

#include <vector>

#include "backend/gemm.h"
#include "core/error.h"
#include "core/rng.h"
#include "model/gpt2.h"

namespace lmforge {
namespace {

struct StepResult {
    double loss;
    std::vector<float> grads;
    size_t activation_bytes;
};

StepResult train_step(Precision precision, Recompute recompute) {
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    const Gpt2Config cfg{3, 2, 32, 61, 24};  // 3 layers: the middle one is recomputed between others
    Gpt2 model(cfg, *gemm, precision, recompute);
    model.init_weights(7);
    const int64_t B = 2, T = 24;
    Rng rng(11);
    Batch batch;
    batch.resize_for_tokens(B, T);
    for (auto& t : batch.inputs) t = static_cast<int32_t>(rng.below(cfg.vocab_size));
    for (auto& t : batch.targets) t = static_cast<int32_t>(rng.below(cfg.vocab_size));
    // Two accumulated micro-steps: the second backward adds to the first's gradients.
    double loss = 0.0;
    for (int micro = 0; micro < 2; micro++) {
        loss = model.forward_backward(batch, 0.5f, micro > 0).sum;
        std::swap(batch.inputs, batch.targets);
    }
    return {loss, std::vector<float>(model.grads().begin(), model.grads().end()), model.activation_bytes()};
}

class RecomputeTest : public ::testing::TestWithParam<Precision> {};

TEST_P(RecomputeTest, GradientsAreBitIdenticalAndMemoryShrinks) {
    const StepResult none = train_step(GetParam(), Recompute::None);
    const StepResult gelu = train_step(GetParam(), Recompute::Gelu);
    const StepResult block = train_step(GetParam(), Recompute::Block);
    EXPECT_EQ(gelu.loss, none.loss);
    EXPECT_EQ(block.loss, none.loss);
    EXPECT_EQ(gelu.grads, none.grads);
    EXPECT_EQ(block.grads, none.grads);
    EXPECT_LT(gelu.activation_bytes, none.activation_bytes);
    EXPECT_LT(block.activation_bytes, gelu.activation_bytes);
    const bool one_pass =
        kernels::lm_head_one_pass(*backend::make_gemm(backend::GemmKind::Onednn), GetParam() == Precision::Bf16);
    const Gpt2Config cfg{3, 2, 32, 61, 24};
    const HeadDims head{.C = cfg.n_embd, .V = cfg.vocab_size, .Vp = cfg.padded_vocab(), .L = 0};
    EXPECT_EQ(none.activation_bytes, gpt2_acts_bytes(cfg, 2, 24, GetParam(), Recompute::None) +
                                         causal_head_bytes(head, 2, 24, GetParam(), one_pass));
}

INSTANTIATE_TEST_SUITE_P(Precisions, RecomputeTest, ::testing::Values(Precision::Fp32, Precision::Bf16),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

TEST(Recompute, ParsesNamesAndRejectsOthers) {
    EXPECT_EQ(parse_recompute("none"), Recompute::None);
    EXPECT_EQ(parse_recompute("gelu"), Recompute::Gelu);
    EXPECT_EQ(parse_recompute("block"), Recompute::Block);
    EXPECT_THROW(parse_recompute("all"), InputError);
    EXPECT_STREQ(recompute_name(Recompute::Block), "block");
}

}  // namespace
}  // namespace lmforge
