// The training call of every model, forward_backward(batch, grad_scale, accumulate), on GPT-2
// (language-model and classification heads) and BERT (masked-LM and classification heads), in
// both precisions, Llama (both heads) in bf16, and with the gradients kept in bf16: its losses
// are inference's; accumulate=false overwrites every gradient, however stale; two accumulated
// batches give the sum of their gradients; the scale scales them exactly (a power of two); a
// batch with nothing to predict gives zero gradients. The gradients themselves are checked
// against PyTorch by the golden tests.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/gemm.h"
#include "core/bf16.h"
#include "core/rng.h"
#include "kernels/crossentropy.h"
#include "model/bert.h"
#include "model/gpt2.h"
#include "model/llama.h"
#include "test_util.h"

namespace lmforge {
namespace {

constexpr int64_t kB = 4, kT = 48;  // 192 rows: the LM head's blocks take 96, so two per pass
constexpr int64_t kVocab = 61, kLabels = 3;

enum class Arch { Gpt2Lm, Gpt2Classify, BertMlm, BertClassify, LlamaLm, LlamaClassify };

struct Case {
    Arch arch;
    Precision precision;
    bool bf16_grads = false;  // GPT-2 in bf16 precision only
};

std::unique_ptr<Model> make(const Case& c, backend::Gemm& gemm) {
    const bool classify = c.arch == Arch::Gpt2Classify || c.arch == Arch::BertClassify || c.arch == Arch::LlamaClassify;
    std::unique_ptr<Model> model;
    if (c.arch == Arch::LlamaLm || c.arch == Arch::LlamaClassify) {
        LlamaConfig cfg = test::tiny_llama_config(false, kT);  // untied: the head matrix and embedding apart
        cfg.vocab_size = kVocab;
        cfg.num_labels = classify ? kLabels : 0;
        model = std::make_unique<Llama>(cfg, gemm, c.precision);
    } else if (c.arch == Arch::Gpt2Lm || c.arch == Arch::Gpt2Classify) {
        Gpt2Config cfg{2, 2, 32, kVocab, kT};
        cfg.num_labels = classify ? kLabels : 0;
        model = std::make_unique<Gpt2>(cfg, gemm, c.precision, Recompute::None);
    } else {
        BertConfig cfg;
        cfg.n_layer = 2;
        cfg.n_head = 2;
        cfg.hidden = 32;
        cfg.intermediate = 128;
        cfg.vocab_size = kVocab;
        cfg.max_position = kT;
        cfg.num_labels = classify ? kLabels : 0;
        model = std::make_unique<Bert>(cfg, gemm, c.precision);
    }
    if (c.bf16_grads) model->keep_grads_in_bf16();
    model->init_weights(3);
    return model;
}

// A batch for the case's head: targets on about half the positions (the gathered head rows),
// or a label per sequence; the last sequence padded to half its length. `predict` false: no
// target at all.
Batch make_batch(const Case& c, uint64_t seed, bool predict = true) {
    Rng rng(seed);
    Batch b;
    b.resize_for_tokens(kB, kT);
    b.lengths.assign(kB, kT);
    b.lengths[kB - 1] = kT / 2;
    for (int64_t i = 0; i < kB * kT; i++) {
        b.inputs[i] = static_cast<int32_t>(rng.below(kVocab));
        const bool counted = predict && rng.below(2) == 0 && i % kT < b.lengths[i / kT];
        b.targets[i] = counted ? static_cast<int32_t>(rng.below(kVocab)) : kernels::kIgnoreIndex;
    }
    if (c.arch == Arch::Gpt2Classify || c.arch == Arch::BertClassify || c.arch == Arch::LlamaClassify) {
        b.targets.clear();
        for (int64_t s = 0; s < kB; s++) b.labels.push_back(static_cast<int32_t>(rng.below(kLabels)));
    }
    return b;
}

// Every gradient set to NaN.
void poison(Model& m) {
    std::fill(m.grads().begin(), m.grads().end(), std::numeric_limits<float>::quiet_NaN());
    std::fill(m.grads_bf16().begin(), m.grads_bf16().end(), to_bf16(std::numeric_limits<float>::quiet_NaN()));
}

// The tensors whose gradients differ bit for bit (NaN differs from everything), for messages.
std::string differing(const Model& m, const std::vector<float>& a, const std::vector<float>& b) {
    std::string names;
    for (const ParamSpec& s : m.layout().specs()) {
        for (int64_t i = s.offset; i < s.offset + s.reserved; i++) {
            if (!(a[i] == b[i])) {
                names += s.name + " ";
                break;
            }
        }
    }
    return names;
}

class ForwardBackward : public ::testing::TestWithParam<Case> {
protected:
    std::unique_ptr<backend::Gemm> gemm_ = backend::make_gemm(backend::GemmKind::Onednn);
    // The gradients of one batch from scratch, on a fresh model.
    std::vector<float> fresh(const Batch& b, float scale) {
        auto m = make(GetParam(), *gemm_);
        m->forward_backward(b, scale, false);
        return test::grads_as_floats(*m);
    }
};

TEST_P(ForwardBackward, ItsLossesAreInferences) {
    auto model = make(GetParam(), *gemm_);
    const Batch b = make_batch(GetParam(), 5);
    const LossSum trained = model->forward_backward(b, 1.0f, false);
    const LossSum inferred = model->forward(b);
    EXPECT_EQ(trained.count, inferred.count);
    EXPECT_EQ(trained.count, b.counted());
    EXPECT_EQ(trained.correct, inferred.correct);
    EXPECT_NEAR(trained.sum, inferred.sum, 1e-5 * std::abs(inferred.sum));
}

TEST_P(ForwardBackward, OverwritingForgetsEveryStaleGradient) {
    // Stale: NaN everywhere, then another batch's gradients (in bf16 gradients, also what that
    // batch left in the window every block shares).
    auto model = make(GetParam(), *gemm_);
    const Batch a = make_batch(GetParam(), 4), b = make_batch(GetParam(), 5);
    poison(*model);
    model->forward_backward(a, 1.0f, false);
    poison(*model);
    model->forward_backward(b, 1.0f, false);
    const std::vector<float> want = fresh(b, 1.0f);
    EXPECT_EQ(differing(*model, test::grads_as_floats(*model), want), "");
}

TEST_P(ForwardBackward, AccumulatingAddsTheBatchesGradients) {
    auto model = make(GetParam(), *gemm_);
    const Batch a = make_batch(GetParam(), 5), b = make_batch(GetParam(), 6);
    model->forward_backward(a, 0.5f, false);
    model->forward_backward(b, 0.5f, true);
    std::vector<float> sum = fresh(a, 0.5f);
    const std::vector<float> second = fresh(b, 0.5f);
    for (size_t i = 0; i < sum.size(); i++) sum[i] += second[i];
    const double scale = test::max_abs(std::span<const float>(sum));
    // bf16 gradients round each batch's sum, and then their total: a few bf16 steps of the largest.
    const double tol = GetParam().bf16_grads ? 0x1p-6 : 1e-6;
    const double rtol = GetParam().bf16_grads ? 0x1p-7 : 1e-5;
    EXPECT_TRUE(test::close(test::grads_as_floats(*model), sum, rtol, tol * scale));
}

TEST_P(ForwardBackward, TheScaleScalesEveryGradientExactly) {
    const Batch b = make_batch(GetParam(), 5);
    std::vector<float> doubled = fresh(b, 0.25f);
    for (float& g : doubled) g *= 2;
    EXPECT_EQ(fresh(b, 0.5f), doubled);
}

// Language-model heads only: a classification batch always has its labels.
class ForwardBackwardLm : public ForwardBackward {};

TEST_P(ForwardBackwardLm, NothingToPredictGivesZeroGradients) {
    auto model = make(GetParam(), *gemm_);
    poison(*model);
    const LossSum loss = model->forward_backward(make_batch(GetParam(), 5, false), 1.0f, false);
    EXPECT_EQ(loss.count, 0);
    EXPECT_EQ(differing(*model, test::grads_as_floats(*model), std::vector<float>(model->params().size(), 0.0f)), "");
}

// bf16 gradients are the fp32 ones rounded once, bit for bit, wherever backward writes them
// through the window (the same kernels, the same fp32 sums); the embedding and the LM head's
// matrix, written in bf16 by their kernels directly (the LM head's row blocks, the tokens'
// sums), within a few bf16 steps of their largest gradient.
class Bf16Gradients : public ForwardBackward {};

TEST_P(Bf16Gradients, AreTheFp32OnesRoundedOnce) {
    Case fp32_grads = GetParam();
    fp32_grads.bf16_grads = false;
    auto rounded = make(GetParam(), *gemm_), exact = make(fp32_grads, *gemm_);
    const Batch a = make_batch(GetParam(), 4), b = make_batch(GetParam(), 5);
    for (const Batch* batch : {&a, &b}) {
        rounded->forward_backward(*batch, 1.0f, false);
        exact->forward_backward(*batch, 1.0f, false);
    }
    const std::vector<float> got = test::grads_as_floats(*rounded), want = test::grads_as_floats(*exact);
    for (const ParamSpec& s : rounded->layout().specs()) {
        const std::span<const float> w(want.data() + s.offset, static_cast<size_t>(s.reserved));
        const auto largest = static_cast<float>(test::max_abs(w));
        for (int64_t i = s.offset; i < s.offset + s.reserved; i++) {
            if (s.name == "wte.weight" || s.name == "model.embed_tokens.weight" || s.name == "lm_head.weight" ||
                s.name.ends_with("word_embeddings.weight")) {
                ASSERT_NEAR(got[i], want[i], 0x1p-6f * largest) << s.name << " at " << i - s.offset;
            } else {
                ASSERT_EQ(got[i], from_bf16(to_bf16(want[i]))) << s.name << " at " << i - s.offset;
            }
        }
    }
}

TEST(Bf16GradientsSetUp, NeedMixedPrecisionAndAModelThatIsNotLoras) {
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    const std::string fp32 = test::input_error_of([&] { make({Arch::Gpt2Lm, Precision::Fp32, true}, *gemm); });
    EXPECT_EQ(fp32, "bf16 gradients need mixed precision");
    LoraOptions lora;
    lora.rank = 4;
    lora.alpha = 8;
    lora.targets.fill(true);
    Llama adapted(test::tiny_llama_config(true, kT), *gemm, Precision::Bf16, Recompute::None, lora);
    EXPECT_EQ(test::input_error_of([&] { adapted.keep_grads_in_bf16(); }),
              "LoRA keeps its adapters' gradients in fp32: they take a few MiB");
}

std::string name_of(const ::testing::TestParamInfo<Case>& info) {
    const char* arch[] = {"Gpt2Lm", "Gpt2Classify", "BertMlm", "BertClassify", "LlamaLm", "LlamaClassify"};
    return std::string(arch[static_cast<int>(info.param.arch)]) + "_" + precision_name(info.param.precision) +
           (info.param.bf16_grads ? "_bf16_grads" : "");
}

INSTANTIATE_TEST_SUITE_P(
    Models, ForwardBackward,
    ::testing::Values(Case{Arch::Gpt2Lm, Precision::Fp32}, Case{Arch::Gpt2Lm, Precision::Bf16},
                      Case{Arch::Gpt2Lm, Precision::Bf16, true}, Case{Arch::Gpt2Classify, Precision::Fp32},
                      Case{Arch::Gpt2Classify, Precision::Bf16}, Case{Arch::Gpt2Classify, Precision::Bf16, true},
                      Case{Arch::BertMlm, Precision::Fp32}, Case{Arch::BertMlm, Precision::Bf16},
                      Case{Arch::BertMlm, Precision::Bf16, true}, Case{Arch::BertClassify, Precision::Fp32},
                      Case{Arch::BertClassify, Precision::Bf16}, Case{Arch::BertClassify, Precision::Bf16, true},
                      Case{Arch::LlamaLm, Precision::Bf16}, Case{Arch::LlamaLm, Precision::Bf16, true},
                      Case{Arch::LlamaClassify, Precision::Bf16}, Case{Arch::LlamaClassify, Precision::Bf16, true}),
    name_of);

INSTANTIATE_TEST_SUITE_P(Models, Bf16Gradients,
                         ::testing::Values(Case{Arch::Gpt2Lm, Precision::Bf16, true},
                                           Case{Arch::Gpt2Classify, Precision::Bf16, true},
                                           Case{Arch::LlamaLm, Precision::Bf16, true},
                                           Case{Arch::LlamaClassify, Precision::Bf16, true},
                                           Case{Arch::BertMlm, Precision::Bf16, true},
                                           Case{Arch::BertClassify, Precision::Bf16, true}),
                         name_of);

INSTANTIATE_TEST_SUITE_P(Models, ForwardBackwardLm,
                         ::testing::Values(Case{Arch::Gpt2Lm, Precision::Fp32}, Case{Arch::Gpt2Lm, Precision::Bf16},
                                           Case{Arch::Gpt2Lm, Precision::Bf16, true},
                                           Case{Arch::BertMlm, Precision::Fp32}, Case{Arch::BertMlm, Precision::Bf16},
                                           Case{Arch::BertMlm, Precision::Bf16, true},
                                           Case{Arch::LlamaLm, Precision::Bf16, true}),
                         name_of);

}  // namespace
}  // namespace lmforge
