// A checkpoint's Adam moments in either precision: kept as the run keeps them, and converted
// when a run resumes in the other one (bf16 to fp32 exactly, fp32 to bf16 rounded to
// nearest), with the vocabulary's padding rows zero; moments that do not cover the whole
// layout are refused.
#include <gtest/gtest.h>

#include <vector>

#include "backend/gemm.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "model/gpt2.h"
#include "temp_dir.h"
#include "test_util.h"

namespace lmforge {
namespace {

class CheckpointMoments : public test::TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        model_.init_weights(1);
    }
    // Moments of the whole layout: random, but zero on the padding rows (as AdamW keeps them).
    Moments random_moments(MomentPrecision precision) {
        const auto n = static_cast<size_t>(model_.layout().total());
        Moments out(precision, n);
        const MomentSpans s = out.spans();
        const auto m = test::random_vector(static_cast<int64_t>(n), 7), v = test::random_vector(static_cast<int64_t>(n), 8);
        for (const ParamSpec& p : model_.layout().specs()) {
            for (int64_t i = p.offset; i < p.offset + p.numel; i++) {
                if (precision == MomentPrecision::F32) {
                    s.m[i] = m[i];
                    s.v[i] = v[i] * v[i];
                } else {
                    s.m_bf16[i] = to_bf16(m[i]);
                    s.v_bf16[i] = to_bf16(v[i] * v[i]);
                }
            }
        }
        return out;
    }
    // Saves `saved` and loads it back into moments of `precision`.
    Moments round_trip(Moments& saved, MomentPrecision precision) {
        const std::string dir = path("ckpt_" + std::to_string(round_++));
        save_checkpoint(dir, model_, {saved.spans(), 3}, TrainingState{}, "");
        Moments loaded(precision, static_cast<size_t>(model_.layout().total()));
        OptimizerMoments into{loaded.spans(), 0};
        TrainingState state;
        load_checkpoint(dir, model_, into, state);
        EXPECT_EQ(into.steps, 3);
        return loaded;
    }

    std::unique_ptr<backend::Gemm> gemm_ = backend::make_gemm(backend::GemmKind::Onednn);
    Gpt2 model_{Gpt2Config{2, 2, 32, 61, 16}, *gemm_, Precision::Fp32, Recompute::None};  // vocabulary 61, padded 64
    int round_ = 0;
};

TEST_F(CheckpointMoments, EachPrecisionIsKeptAndConvertedOnLoad) {
    Moments wide = random_moments(MomentPrecision::F32), narrow = random_moments(MomentPrecision::BF16);
    const MomentSpans w = wide.spans(), n = narrow.spans();

    Moments same = round_trip(wide, MomentPrecision::F32);
    EXPECT_TRUE(std::equal(w.m.begin(), w.m.end(), same.spans().m.begin()));
    EXPECT_TRUE(std::equal(w.v.begin(), w.v.end(), same.spans().v.begin()));
    EXPECT_EQ(SafetensorsReader(path("ckpt_0/optimizer.safetensors")).info("m/wte.weight").dtype, Dtype::F32);

    Moments rounded = round_trip(wide, MomentPrecision::BF16);  // fp32 file into bf16 moments
    for (size_t i = 0; i < w.size(); i++) {
        ASSERT_EQ(rounded.spans().m_bf16[i], to_bf16(w.m[i])) << i;
        ASSERT_EQ(rounded.spans().v_bf16[i], to_bf16(w.v[i])) << i;
    }

    Moments kept = round_trip(narrow, MomentPrecision::BF16);
    EXPECT_TRUE(std::equal(n.m_bf16.begin(), n.m_bf16.end(), kept.spans().m_bf16.begin()));
    EXPECT_EQ(SafetensorsReader(path("ckpt_2/optimizer.safetensors")).info("v/wte.weight").dtype, Dtype::BF16);

    Moments widened = round_trip(narrow, MomentPrecision::F32);  // bf16 file into fp32 moments
    for (size_t i = 0; i < n.size(); i++) {
        ASSERT_EQ(widened.spans().m[i], from_bf16(n.m_bf16[i])) << i;
        ASSERT_EQ(widened.spans().v[i], from_bf16(n.v_bf16[i])) << i;
    }
    // The padding rows of the embedding (61..63) stay zero in every case.
    const ParamSpec& wte = model_.layout().find("wte.weight");
    for (int64_t i = wte.offset + wte.numel; i < wte.offset + wte.reserved; i++) {
        EXPECT_EQ(widened.spans().m[i], 0.0f);
        EXPECT_EQ(rounded.spans().v_bf16[i], 0);
    }
}

TEST_F(CheckpointMoments, MomentsOfPartOfTheLayoutAreRefused) {
    Moments shard(MomentPrecision::BF16, static_cast<size_t>(model_.layout().total() / 2));
    EXPECT_THROW(save_checkpoint(path("part"), model_, {shard.spans(), 1}, TrainingState{}, ""), Error);
    Moments whole = random_moments(MomentPrecision::BF16);
    save_checkpoint(path("whole"), model_, {whole.spans(), 1}, TrainingState{}, "");  // a good checkpoint
    OptimizerMoments into{shard.spans(), 0};
    TrainingState state;
    EXPECT_THROW(load_checkpoint(path("whole"), model_, into, state), Error);
}

}  // namespace
}  // namespace lmforge
