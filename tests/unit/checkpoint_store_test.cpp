// checkpoint/checkpoint_store: the last keep_last checkpoints kept by step number (past step 999999
// the names grow a digit), best/ written alone without touching them, and best/ published
// before `latest` moves on.
#include "checkpoint/checkpoint_store.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>

#include "backend/gemm.h"
#include "model/gpt2.h"
#include "optim/moments.h"
#include "cli_util.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;

class Store : public test::TempDirTest {
protected:
    void save(CheckpointStore& store, int64_t step, bool best = false) {
        TrainingState state;
        state.step = step;
        store.save(model_, {moments_.spans(), 0}, state, {}, best);
    }
    bool kept(int64_t step) const {
        return fs::is_directory(fmt::format("{}/checkpoints/step_{:06d}", path("run"), step));
    }
    std::unique_ptr<backend::Gemm> gemm_ = backend::make_gemm(backend::GemmKind::Naive);
    Gpt2 model_{Gpt2Config{1, 1, 8, 16, 8}, *gemm_, Precision::Fp32, Recompute::None};
    Moments moments_{MomentPrecision::F32, static_cast<size_t>(model_.layout().total())};
};

TEST_F(Store, KeepsTheLastCheckpointsByStepNumberPastAMillion) {
    CheckpointStore store(path("run"), 2);
    for (const int64_t step : {999998, 999999, 1000000, 1000001}) save(store, step);
    EXPECT_FALSE(kept(999998));
    EXPECT_FALSE(kept(999999));
    EXPECT_TRUE(kept(1000000));
    EXPECT_TRUE(kept(1000001));
    EXPECT_EQ(*store.latest(), path("run") + "/checkpoints/step_1000001");
}

TEST_F(Store, BestAloneLeavesLatestAndTheKeptCheckpoints) {
    CheckpointStore store(path("run"), 2);
    save(store, 10);
    TrainingState state;
    state.step = 15;
    state.best_loss = 1.5;
    EXPECT_EQ(store.save_best(model_, {moments_.spans(), 0}, state, {}), path("run") + "/best");
    EXPECT_TRUE(fs::exists(path("run/best/model.safetensors")));
    EXPECT_NE(test::slurp(path("run/best/state.json")).find("\"step\": 15"), std::string::npos);
    EXPECT_EQ(*store.latest(), path("run") + "/checkpoints/step_000010");
    EXPECT_TRUE(kept(10));
}

// best/ is published before `latest` moves on: a save that fails (or is killed) between the
// two leaves a best/ of the new step and `latest` at the previous one, so the resume replays
// the step, its evaluation improves on the previous state's best and best/ is written again.
// (The other order left `latest` at the new step, whose state holds the new best loss, and
// best/ at the old one: no later evaluation of the same loss would renew it.) Here `latest`
// cannot be written because a directory stands in its place.
TEST_F(Store, BestIsPublishedBeforeLatestMovesOn) {
    CheckpointStore store(path("run"), 2);
    save(store, 10, true);
    fs::remove(path("run/latest"));
    fs::create_directories(path("run/latest/blocked"));
    EXPECT_ANY_THROW(save(store, 20, true));
    EXPECT_NE(test::slurp(path("run/best/state.json")).find("\"step\": 20"), std::string::npos);
}

}  // namespace
}  // namespace lmforge
