// Generation: the KV-cache path gives the logits of a full forward pass at every position,
// greedy decoding gives the same tokens with and without the cache (also past the context, in a
// sliding window), and a seed gives the same sample twice. On a tiny model first trained a little, so its predictions are sharp.
#include <gtest/gtest.h>

#include "backend/gemm.h"
#include "core/error.h"
#include "core/rng.h"
#include "distributed/comm_single.h"
#include "distributed/data_parallel.h"
#include "model/gpt2.h"
#include "model/gpt2_decoder.h"
#include "optim/adamw.h"
#include "test_util.h"
#include "train/train_step.h"
#include "train/sampler.h"

namespace lmforge {
namespace {

class Generation : public ::testing::Test {
protected:
    void SetUp() override {
        model_.init_weights(5);
        SingleCommunicator comm;
        DataParallel dp(comm, model_, AdamWConfig{.weight_decay = 0}, ParallelOptions{});
        Batch batch;
        batch.resize_for_tokens(2, 32);
        for (int i = 0; i < 64; i++) {  // a cycle to learn
            batch.inputs[i] = (i * 7) % 50;
            batch.targets[i] = ((i + 1) * 7) % 50;
        }
        for (int step = 0; step < 60; step++) train_step(model_, dp, std::span<const Batch>(&batch, 1), 3e-3f, 0.0);
    }
    std::unique_ptr<backend::Gemm> gemm_ = backend::make_gemm(backend::GemmKind::Onednn);
    Gpt2 model_{Gpt2Config{2, 4, 64, 50, 48}, *gemm_};
};

TEST_F(Generation, CachedLogitsEqualAFullForwardPass) {
    const std::vector<int32_t> seq = {3, 10, 17, 24, 31, 38, 45, 2, 9, 16, 23, 30, 37};
    const int64_t T = static_cast<int64_t>(seq.size()), Vp = model_.config().padded_vocab(), V = 50;
    model_.forward(Batch{.B = 1, .T = T, .inputs = seq});
    const std::vector<float> full(model_.logits(), model_.logits() + T * Vp);
    Gpt2Decoder decoder(model_, *gemm_);
    for (int64_t t = 0; t < T; t++) {
        const float* cached = decoder.step(seq[t]);
        ASSERT_TRUE(test::close(std::span<const float>(cached, V), std::span<const float>(full.data() + t * Vp, V),
                                1e-4, 1e-4)) << "position " << t;
    }
}

TEST_F(Generation, GreedyIsTheSameWithAndWithoutTheCache) {
    const std::vector<int32_t> prompt = {3, 10, 17};
    const SampleOptions greedy{40, 0.0, 0, 1.0, std::nullopt};
    Rng a(1), b(1);
    Gpt2Decoder decoder(model_, *gemm_);
    const auto cached = generate(decoder, prompt, greedy, a);
    const auto uncached = generate_without_cache(model_, prompt, greedy, b);
    EXPECT_EQ(cached, uncached);
    EXPECT_EQ(cached.size(), 40u);
    EXPECT_EQ(cached[0], 24);  // it learned the cycle: 3, 10, 17 -> 24
}

// Past the context (48 positions) both paths slide their window alike: 120 tokens from a
// 3-token prompt refill the cache from the last 24 tokens three times.
TEST_F(Generation, GreedyPastTheContextIsTheSameWithAndWithoutTheCache) {
    const std::vector<int32_t> prompt = {3, 10, 17};
    const SampleOptions greedy{120, 0.0, 0, 1.0, std::nullopt};
    Rng a(1), b(1);
    Gpt2Decoder decoder(model_, *gemm_);
    const auto cached = generate(decoder, prompt, greedy, a);
    EXPECT_EQ(cached, generate_without_cache(model_, prompt, greedy, b));
    EXPECT_EQ(cached.size(), 120u);
    EXPECT_EQ(sliding_window_keep(48), 24);
    const std::vector<int32_t> too_long(49, 3);
    EXPECT_THROW(generate(decoder, too_long, greedy, a), InputError);
    EXPECT_THROW(generate_without_cache(model_, too_long, greedy, b), InputError);
}

TEST_F(Generation, ASeedGivesTheSameSampleTwice) {
    const std::vector<int32_t> prompt = {3};
    const SampleOptions opts{30, 1.5, 20, 0.95, std::nullopt};
    Gpt2Decoder decoder(model_, *gemm_);
    Rng r1(77), r2(77), r3(78);
    const auto s1 = generate(decoder, prompt, opts, r1);
    const auto s2 = generate(decoder, prompt, opts, r2);
    const auto s3 = generate(decoder, prompt, opts, r3);
    EXPECT_EQ(s1, s2);
    EXPECT_NE(s1, s3);
}

TEST(Sampling, FiltersAndFrequenciesFollowTheDistribution) {
    const std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f), -1e9f};  // p = 1/6, 2/6, 3/6, 0
    std::vector<std::pair<float, int32_t>> scratch;
    Rng rng(9);
    std::vector<int> counts(4);
    const SampleOptions plain{1, 1.0, 0, 1.0, std::nullopt};
    for (int i = 0; i < 60000; i++) counts[sample_token(logits.data(), 4, plain, rng, scratch)]++;
    EXPECT_NEAR(counts[0] / 60000.0, 1 / 6.0, 0.01);
    EXPECT_NEAR(counts[2] / 60000.0, 3 / 6.0, 0.01);
    EXPECT_EQ(counts[3], 0);
    const SampleOptions top1{1, 1.0, 1, 1.0, std::nullopt};
    for (int i = 0; i < 100; i++) EXPECT_EQ(sample_token(logits.data(), 4, top1, rng, scratch), 2);
    const SampleOptions nucleus{1, 1.0, 0, 0.6, std::nullopt};  // {2} holds 0.5 < 0.6: {2, 1}
    for (int i = 0; i < 200; i++) {
        const int32_t t = sample_token(logits.data(), 4, nucleus, rng, scratch);
        EXPECT_TRUE(t == 1 || t == 2) << t;
    }
    const SampleOptions greedy{1, 0.0, 0, 1.0, std::nullopt};
    EXPECT_EQ(sample_token(logits.data(), 4, greedy, rng, scratch), 2);
}

}  // namespace
}  // namespace lmforge
