// A checkpoint's Adam moments in either precision: kept as the run keeps them, and converted
// when a run resumes in the other one (bf16 to fp32 exactly, fp32 to bf16 rounded to
// nearest), with the vocabulary's padding rows zero; a ZeRO-1 rank loads its shard alone, cut
// anywhere in the layout; moments that do not cover the whole layout are not saved.
#include <gtest/gtest.h>

#include <vector>

#include "backend/gemm.h"
#include "core/error.h"
#include "checkpoint/checkpoint.h"
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
        save_checkpoint(dir, model_, {saved.spans(), 3}, TrainingState{}, {});
        Moments loaded(precision, static_cast<size_t>(model_.layout().total()));
        load_part(dir, loaded, 0);
        return loaded;
    }
    // Loads the elements [first, first + size) of the checkpoint `dir`'s moments into `into`.
    void load_part(const std::string& dir, Moments& into, int64_t first) {
        OptimizerMoments part{into.spans(), 0, first};
        TrainingState state;
        load_checkpoint(dir, model_, part, state);
        EXPECT_EQ(part.steps, 3);
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

TEST_F(CheckpointMoments, EachShardLoadsItsPartAlone) {
    // Cuts inside a tensor, inside the embedding's padding rows (61..63 of 64) and at a
    // tensor's start, as ZeRO-1's equal shards fall; in both precisions, from both.
    const ParamSpec& wte = model_.layout().find("wte.weight");
    const ParamSpec& ln = model_.layout().specs().back();
    const int64_t total = model_.layout().total();
    const std::vector<int64_t> cuts = {0, wte.offset + 100, wte.offset + wte.numel + 5, ln.offset, total};
    for (const MomentPrecision saved_as : {MomentPrecision::F32, MomentPrecision::BF16}) {
        Moments saved = random_moments(saved_as);
        const std::string dir = path("ckpt_" + std::to_string(round_++));
        save_checkpoint(dir, model_, {saved.spans(), 3}, TrainingState{}, {});
        for (const MomentPrecision loaded_as : {MomentPrecision::F32, MomentPrecision::BF16}) {
            Moments whole(loaded_as, static_cast<size_t>(total));
            load_part(dir, whole, 0);
            for (size_t k = 0; k + 1 < cuts.size(); k++) {
                const auto n = static_cast<size_t>(cuts[k + 1] - cuts[k]);
                Moments shard(loaded_as, n);
                load_part(dir, shard, cuts[k]);
                const MomentSpans want = whole.spans().subspan(static_cast<size_t>(cuts[k]), n), got = shard.spans();
                EXPECT_TRUE(std::equal(want.m.begin(), want.m.end(), got.m.begin())) << k;
                EXPECT_TRUE(std::equal(want.v.begin(), want.v.end(), got.v.begin())) << k;
                EXPECT_TRUE(std::equal(want.m_bf16.begin(), want.m_bf16.end(), got.m_bf16.begin())) << k;
                EXPECT_TRUE(std::equal(want.v_bf16.begin(), want.v_bf16.end(), got.v_bf16.begin())) << k;
            }
        }
    }
}

TEST_F(CheckpointMoments, MomentsOfPartOfTheLayoutAreNotSavedNorLoadedPastItsEnd) {
    const int64_t total = model_.layout().total();
    Moments shard(MomentPrecision::BF16, static_cast<size_t>(total / 2));
    EXPECT_THROW(save_checkpoint(path("part"), model_, {shard.spans(), 1}, TrainingState{}, {}), Error);
    Moments whole = random_moments(MomentPrecision::BF16);
    EXPECT_THROW(save_checkpoint(path("moved"), model_, {whole.spans(), 1, 1}, TrainingState{}, {}), Error);
    save_checkpoint(path("whole"), model_, {whole.spans(), 1}, TrainingState{}, {});  // a good checkpoint
    TrainingState state;
    OptimizerMoments past_end{shard.spans(), 0, total / 2 + 1};
    EXPECT_THROW(load_checkpoint(path("whole"), model_, past_end, state), Error);
    OptimizerMoments before_start{shard.spans(), 0, -1};
    EXPECT_THROW(load_checkpoint(path("whole"), model_, before_start, state), Error);
}

}  // namespace
}  // namespace lmforge
