// train/mlflow_outbox: metrics queued in order, named "<group>/<key>", leaving only when
// settled, in batches of at most n; and, for a resumed MLflow run, held back until the
// server's steps of their key are known, those it holds dropped unsent.
#include "train/mlflow_outbox.h"

#include <gtest/gtest.h>

namespace lmforge {
namespace {

MlflowOutbox three_steps() {
    MlflowOutbox box;
    for (int64_t step = 0; step < 3; step++) {
        box.add(step, "train", {{"loss", 4.0 - static_cast<double>(step)}, {"lr", 0.1}}, 1000 + step);
    }
    box.add(3, "val", {{"val_loss", 2.5}}, 2000);
    return box;
}

TEST(MlflowOutbox, BatchesInOrderUntilSettled) {
    MlflowOutbox box = three_steps();
    ASSERT_EQ(box.size(), 7u);
    EXPECT_TRUE(box.unknown_keys(100).empty());  // a new MLflow run: nothing to ask the server
    const MlflowOutbox::Batch first = box.next(4);
    ASSERT_EQ(first.metrics.size(), 4u);
    EXPECT_EQ(first.covers, 4u);
    EXPECT_EQ(first.metrics[0].key, "train/loss");
    EXPECT_EQ(first.metrics[3].key, "train/lr");
    EXPECT_EQ(first.metrics[2].step, 1);
    EXPECT_EQ(first.metrics[2].value, 3.0);
    EXPECT_EQ(first.metrics[2].timestamp_ms, 1001);
    // Not settled (the answer was lost): the same batch again, timestamps and all.
    const MlflowOutbox::Batch again = box.next(4);
    ASSERT_EQ(again.metrics.size(), 4u);
    for (size_t i = 0; i < 4; i++) {
        EXPECT_EQ(again.metrics[i].key, first.metrics[i].key);
        EXPECT_EQ(again.metrics[i].timestamp_ms, first.metrics[i].timestamp_ms);
    }
    box.settled(first);
    const MlflowOutbox::Batch rest = box.next(100);
    ASSERT_EQ(rest.metrics.size(), 3u);
    EXPECT_EQ(rest.metrics[2].key, "val/val_loss");
    box.settled(rest);
    EXPECT_TRUE(box.empty());
    EXPECT_EQ(box.next(100).covers, 0u);
}

TEST(MlflowOutbox, AResumedRunSendsOnlyTheStepsTheServerLacks) {
    MlflowOutbox box = three_steps();
    box.check_server();
    EXPECT_EQ(box.unknown_keys(100), (std::vector<std::string>{"train/loss", "train/lr", "val/val_loss"}));
    EXPECT_EQ(box.unknown_keys(2), (std::vector<std::string>{"train/loss", "train/lr"}));
    box.known("train/loss", {0, 1, 2});  // the run before the crash sent its loss, not its lr
    box.known("train/lr", {0});
    box.known("val/val_loss", {});
    EXPECT_TRUE(box.unknown_keys(100).empty());
    const MlflowOutbox::Batch batch = box.next(100);
    EXPECT_EQ(batch.covers, 7u);
    ASSERT_EQ(batch.metrics.size(), 3u);
    EXPECT_EQ(batch.metrics[0].key, "train/lr");
    EXPECT_EQ(batch.metrics[0].step, 1);
    EXPECT_EQ(batch.metrics[1].step, 2);
    EXPECT_EQ(batch.metrics[2].key, "val/val_loss");
    box.settled(batch);
    EXPECT_TRUE(box.empty());
    // A later line of a key already known needs no question, and goes unless held.
    box.add(3, "train", {{"loss", 0.5}}, 3000);
    box.add(2, "train", {{"loss", 0.7}}, 3001);
    EXPECT_TRUE(box.unknown_keys(100).empty());
    const MlflowOutbox::Batch later = box.next(100);
    ASSERT_EQ(later.metrics.size(), 1u);
    EXPECT_EQ(later.metrics[0].step, 3);
    EXPECT_EQ(later.covers, 2u);
}

}  // namespace
}  // namespace lmforge
