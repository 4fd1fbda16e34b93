// Under MPI every task trains as one process with the global batch: 2 ranks with micro-batches
// of B give the losses of 1 rank with 2B at every step, within 1e-5 relative, for classify
// (GPT-2 and BERT, each rank padding its batch to its own longest example), mlm (each row's
// masks its own, whichever rank draws it; the loss over all masked tokens of both ranks) and
// sft (the loss over all response tokens of both ranks, not a mean of two means); and a
// checkpoint of 2 ranks resumes on 1, which accumulates two micro-batches to the run's global
// batch. fp32, over one epoch or 20 steps: sums taken in another order round otherwise, and
// AdamW lets those differences of 1e-7 grow by about 1e-6 a step.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "task_runs.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;
using test::run_lmforge;
using test::run_lmforge_mpi;

class TasksMpi : public test::TempDirTest, public ::testing::WithParamInterface<test::TaskCase> {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        data_ = test::prepare_task_data(*this, GetParam());
    }
    // B sequences per process: the 1-process run takes 2B.
    int batch() const { return GetParam().task == "classify" || GetParam().task == "sft" ? 8 : 4; }
    std::string config(const std::string& run, int b) {
        return test::task_config(*this, GetParam(), data_, run, b, "fp32") + " --set train.max_steps=20 --set train.epochs=1";
    }
    // step -> the metrics line's value of `key`, for lines of that kind.
    std::map<int, double> series(const std::string& run, const std::string& key) {
        std::map<int, double> out;
        std::ifstream in(path(run + "/metrics.jsonl"));
        for (std::string line; std::getline(in, line);) {
            const auto j = nlohmann::json::parse(line);
            if (j.contains(key)) out[j["step"].get<int>()] = j[key].get<double>();
        }
        return out;
    }
    void expect_same_losses(const std::string& a, const std::string& b) {
        std::vector<std::string> keys = {"loss", "val_loss"};
        if (GetParam().task == "distill") keys.emplace_back("kl");  // the teacher's terms
        if (GetParam().name == "distill_bert") keys.emplace_back("cos");
        for (const std::string& key : keys) {
            const auto x = series(a, key), y = series(b, key);
            ASSERT_EQ(y.size(), x.size()) << b << " " << key;
            ASSERT_GT(x.size(), 1u);
            for (const auto& [step, value] : x) {
                // kl and cos are small differences of terms of order 1 (entropies, unit cosines):
                // their rounding is of those terms' size, so they are held to 1e-5 of 0.1 at least.
                const double scale = key == "kl" || key == "cos" ? std::max(std::abs(value), 0.1) : std::abs(value);
                EXPECT_NEAR(y.at(step), value, 1e-5 * scale) << b << " " << key << " at step " << step;
            }
        }
    }
    std::string data_;
};

TEST_P(TasksMpi, TwoRanksWithBatchBTrainAsOneRankWith2B) {
    const auto one = run_lmforge("train " + config("one", 2 * batch()));
    ASSERT_EQ(one.status, 0) << one.err;
    const auto two = run_lmforge_mpi(2, "train " + config("two", batch()));
    ASSERT_EQ(two.status, 0) << two.err;
    EXPECT_NE(two.err.find("x 2 processes = " + std::to_string(2 * batch()) + " sequences per step"), std::string::npos)
        << two.err;
    expect_same_losses("one", "two");
    EXPECT_TRUE(fs::exists(path("two/final/model.safetensors")));
    if (fs::exists(path("one/test_report.json"))) {  // classify and sft: every test example counted once
        const auto a = nlohmann::json::parse(test::slurp(path("one/test_report.json")));
        const auto b = nlohmann::json::parse(test::slurp(path("two/test_report.json")));
        EXPECT_EQ(b["best_step"], a["best_step"]);
        EXPECT_NEAR(b["test_loss"].get<double>(), a["test_loss"].get<double>(), 1e-4 * a["test_loss"].get<double>());
    }
}

TEST_P(TasksMpi, ACheckpointOfTwoRanksResumesOnOneWithTheRunsGlobalBatch) {
    ASSERT_EQ(run_lmforge("train " + config("one", 2 * batch())).status, 0);
    const std::string cfg = config("moved", batch());
    ASSERT_EQ(run_lmforge_mpi(2, "train " + cfg).status, 0);
    // Back to step 14, as if the 2-rank run had stopped there.
    for (const auto& e : fs::directory_iterator(path("moved/checkpoints"))) {
        if (e.path().filename() != "step_000014") fs::remove_all(e.path());
    }
    fs::remove_all(path("moved/final"));
    write("moved/latest", "step_000014\n");
    const auto resumed = run_lmforge("train " + cfg);
    ASSERT_EQ(resumed.status, 0) << resumed.err;
    EXPECT_NE(resumed.err.find(std::to_string(batch()) + " sequences x 2 accumulation x 1 process"), std::string::npos)
        << resumed.err;
    expect_same_losses("one", "moved");
}

std::string name_of(const ::testing::TestParamInfo<test::TaskCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Tasks, TasksMpi,
                         ::testing::Values(test::task_cases()[1], test::task_cases()[2], test::task_cases()[3],
                                           test::task_cases()[4], test::task_cases()[5], test::task_cases()[6],
                                           test::task_cases()[8], test::task_cases()[9], test::task_cases()[10],
                                           test::task_cases()[11]),
                         name_of);

}  // namespace
}  // namespace lmforge
