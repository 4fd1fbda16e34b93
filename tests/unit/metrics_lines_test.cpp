// train/metrics: what MetricsLog writes, read back line by line with the group it was written
// under (which a resumed run's tracking needs), the sink seeing each line, and a resume keeping
// only the lines before its step.
#include <gtest/gtest.h>

#include <cmath>

#include "cli_util.h"
#include "temp_dir.h"
#include "train/metrics.h"

namespace lmforge {
namespace {

class MetricsLines : public test::TempDirTest {};

TEST_F(MetricsLines, ReadBackWithTheirGroups) {
    std::vector<std::string> seen;
    {
        MetricsLog log(path(""), false, 0);
        log.also_to([&](int64_t step, const std::string& group, const MetricValues& values) {
            seen.push_back(std::to_string(step) + group + std::to_string(values.size()));
        });
        log.write(0, "val", {{"val_loss", 4.5}, {"val_perplexity", 90.0}});
        log.write(0, "train", {{"loss", 4.4}, {"lr", 1e-4}, {"grad_norm", std::nan("")}});
        log.write(4, "epoch", {{"epoch", 1.0}, {"epoch_loss", 3.0}, {"epoch_accuracy", 0.5}});
        log.write(4, "val", {{"val_loss", 3.5}, {"epoch", 1.0}});
        log.write(4, "multiple_choice", {{"mc_accuracy", 0.25}, {"mc_accuracy_norm", 0.3}, {"mc_items", 8.0}});
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"0val2", "0train3", "4epoch3", "4val2", "4multiple_choice3"}));
    write("metrics.jsonl", test::slurp(path("metrics.jsonl")) + "{\"step\": 5, \"lo");  // a killed writer's
    const std::vector<MetricsLine> lines = read_metrics_lines(path(""));
    ASSERT_EQ(lines.size(), 5u);
    EXPECT_EQ(lines[0].group, "val");
    EXPECT_EQ(lines[1].group, "train");
    EXPECT_EQ(lines[1].values.size(), 2u);  // the NaN grad_norm was written as null: not a value
    EXPECT_EQ(lines[2].group, "epoch");
    EXPECT_EQ(lines[2].step, 4);
    EXPECT_EQ(lines[3].group, "val");
    EXPECT_EQ(lines[4].group, "multiple_choice");
    for (const auto& [key, value] : lines[1].values) {
        if (key == "lr") {
            EXPECT_EQ(value, 1e-4);
        }
    }
}

TEST_F(MetricsLines, AResumeKeepsTheLinesBeforeItsStep) {
    {
        MetricsLog log(path(""), false, 0);
        for (int64_t step = 0; step < 6; step++) log.write(step, "train", {{"loss", 1.0}});
    }
    { MetricsLog resumed(path(""), false, 4); }
    const std::vector<MetricsLine> lines = read_metrics_lines(path(""));
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines.back().step, 3);
}

}  // namespace
}  // namespace lmforge
