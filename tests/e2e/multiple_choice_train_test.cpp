// eval.multiple_choice during an lm run: the counts and accuracies metrics.jsonl holds at a
// step are what `lmforge eval --multiple-choice` gives that step's checkpoint; they fall due at
// step 0, every eval.multiple_choice_every steps (eval.every's when 0) and at the end; the run
// trains bit for bit as it does without them; the plot gains their panel; and a bad item, or
// another task, stops `lmforge train` at its start with one line, before the run directory is
// made. (Two ranks: tests/mpi/multiple_choice_mpi_test.cpp; exact resume with them on:
// tests/e2e/task_resume_test.cpp's lm case, whose config scores items.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_util.h"
#include "task_runs.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;
using test::run_lmforge;

class MultipleChoiceTraining : public test::TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        data_ = test::prepare_task_data(*this, lm());
        items_ = test::multiple_choice_items(*this, 11, "hellaswag.jsonl");
    }
    static const test::TaskCase& lm() { return test::task_cases()[0]; }

    // A 21-step fp32 run on one thread, checkpoints every 7 steps and all kept, evaluations
    // every 20, scoring items_ at the default cadence; `sets` (later) override.
    std::string train_args(const std::string& run, const std::string& sets = "") {
        return "train " + test::task_config(*this, lm(), data_, run, 8, "fp32") +
               " --set train.max_steps=21 --set checkpoint.keep_last=10 --set sample.count=0 --set sample.every=0" +
               " --set eval.multiple_choice=" + items_ + " --set eval.multiple_choice_every=0 " + sets;
    }
    // step -> metrics.jsonl's multiple-choice line of that step.
    std::map<int, nlohmann::json> choice_lines(const std::string& run) {
        std::map<int, nlohmann::json> lines;
        std::ifstream in(path(run + "/metrics.jsonl"));
        for (std::string line; std::getline(in, line);) {
            const auto j = nlohmann::json::parse(line);
            if (j.contains("mc_accuracy")) lines[j["step"].get<int>()] = j;
        }
        return lines;
    }
    std::set<int> choice_steps(const std::string& run) {
        std::set<int> steps;
        for (const auto& [step, j] : choice_lines(run)) steps.insert(step);
        return steps;
    }
    void expect_one_line(const test::Outcome& o, const std::string& want) {
        EXPECT_EQ(o.status, 2) << o.err;
        EXPECT_EQ(test::count_lines(o.err), 1) << o.err;
        EXPECT_NE(o.err.find(want), std::string::npos) << o.err;
    }

    std::string data_, items_;
};

TEST_F(MultipleChoiceTraining, LoggedCountsEqualTheEvalCommandOnThatStepsCheckpoint) {
    const auto o = run_lmforge(train_args("run", "--set eval.multiple_choice_every=7"));
    ASSERT_EQ(o.status, 0) << o.err;
    const std::string setup = "multiple choice: 11 items of " + items_ + ", every 7 steps and at the end";
    EXPECT_NE(o.err.find(setup), std::string::npos) << o.err;
    EXPECT_NE(o.out.find(", multiple choice accuracy "), std::string::npos) << o.out;
    const auto lines = choice_lines("run");
    ASSERT_EQ(choice_steps("run"), (std::set<int>{0, 7, 14, 21}));
    for (const int step : {7, 14, 21}) {
        const std::string checkpoint = path("run/checkpoints/" + fmt::format("step_{:06d}", step));
        // The run's own tokenizer, which the checkpoint's run directory keeps, as the run read the items with.
        const auto e = run_lmforge("eval --checkpoint " + checkpoint + " --multiple-choice " + items_ + " --threads 1");
        ASSERT_EQ(e.status, 0) << e.err;
        const auto want = nlohmann::json::parse(e.out);
        const nlohmann::json& got = lines.at(step);
        SCOPED_TRACE("step " + std::to_string(step));
        EXPECT_EQ(got["mc_items"].get<int>(), 11);
        EXPECT_EQ(got["mc_items"].get<int>(), want["items"].get<int>());
        EXPECT_EQ(got["mc_correct"].get<int>(), want["correct"].get<int>());
        EXPECT_EQ(got["mc_correct_norm"].get<int>(), want["correct_norm"].get<int>());
        EXPECT_DOUBLE_EQ(got["mc_accuracy"].get<double>(), want["accuracy"].get<double>());
        EXPECT_DOUBLE_EQ(got["mc_accuracy_norm"].get<double>(), want["accuracy_norm"].get<double>());
    }
    // The plot's second panel.
    EXPECT_NE(test::slurp(path("run/plots/loss.svg")).find(">multiple choice</text>"), std::string::npos);
}

TEST_F(MultipleChoiceTraining, FallsDueAtStepZeroAtItsCadenceAndAtTheEnd) {
    // 0: eval.every's cadence (20 in this config).
    ASSERT_EQ(run_lmforge(train_args("default")).status, 0);
    EXPECT_EQ(choice_steps("default"), (std::set<int>{0, 20, 21}));
    ASSERT_EQ(run_lmforge(train_args("own", "--set eval.multiple_choice_every=5")).status, 0);
    EXPECT_EQ(choice_steps("own"), (std::set<int>{0, 5, 10, 15, 20, 21}));
    // With eval.every = 0 as well: only the end.
    ASSERT_EQ(run_lmforge(train_args("end", "--set eval.every=0")).status, 0);
    EXPECT_EQ(choice_steps("end"), (std::set<int>{21}));
}

// Forward passes only: the losses, evaluations and final weights and optimizer state are
// those of the same run without items, bit for bit.
TEST_F(MultipleChoiceTraining, TheRunTrainsAsItDoesWithoutThem) {
    ASSERT_EQ(run_lmforge(train_args("with", "--set eval.multiple_choice_every=3")).status, 0);
    ASSERT_EQ(run_lmforge(train_args("without", "--set eval.multiple_choice=")).status, 0);
    EXPECT_TRUE(choice_steps("without").empty());
    std::vector<std::string> with;
    for (const std::string& line : test::stable_metrics(path("with"))) {
        if (line.find("\"mc_accuracy\"") == std::string::npos) with.push_back(line);
    }
    EXPECT_EQ(with, test::stable_metrics(path("without")));
    for (const char* f : {"final/model.safetensors", "final/optimizer.safetensors"}) {
        EXPECT_EQ(test::slurp(path(std::string("with/") + f)), test::slurp(path(std::string("without/") + f))) << f;
    }
}

TEST_F(MultipleChoiceTraining, ABadItemStopsTheRunAtItsStartNamingFileAndLine) {
    const std::string good = R"({"ctx": "we saw", "endings": ["a goal", "rain"], "label": 0})";
    const auto expect_refused = [&](const std::string& lines, const std::string& want) {
        const std::string file = write("bad.jsonl", good + "\n" + lines + "\n");
        expect_one_line(run_lmforge(train_args("bad", "--set eval.multiple_choice=" + file)), want);
        EXPECT_FALSE(fs::exists(path("bad"))) << want;  // nothing written
    };
    const std::string bad = path("bad.jsonl");
    expect_refused(good + "\n" + R"({"ctx": "we saw", "endings": ["a goal", "rain"], "label": 2})",
                   bad + ":3: label 2 is not the index of one of its 2 endings");
    expect_refused(R"({"ctx": "we saw", "endings": ["a goal"], "label": 0})",
                   bad + ":2: needs \"endings\": a list of at least two strings");
    expect_refused(R"({"ctx": "we saw", "endings": ["a goal", "rain"]})", bad + ":2: needs an integer \"label\"");
    expect_refused("{\"ctx\": \"we saw\", \"endings\": [\"a goal\", ", bad + ":2: not valid JSON");
    // Text the run's character tokenizer has no id for ('Z' is in none of the corpus's words).
    expect_refused(R"({"ctx": "Zebras", "endings": ["a goal", "rain"], "label": 0})",
                   bad + ":2: character \\x5a at byte 0 is not in the character tokenizer's alphabet");
    // An ending of 40 characters after its space leaves no room in the model's 32 positions.
    expect_refused(R"({"ctx": "we", "endings": ["a goal", ")" + std::string(40, 'a') + R"("], "label": 0})",
                   bad + ":2: an ending of 41 tokens leaves no room for context in the model's 32 positions");
    expect_one_line(run_lmforge(train_args("bad", "--set eval.multiple_choice=" + path("none.jsonl"))),
                    path("none.jsonl"));
    EXPECT_FALSE(fs::exists(path("bad")));
}

TEST_F(MultipleChoiceTraining, OtherTasksAndEncodersAreRefusedInOneLine) {
    expect_one_line(run_lmforge(train_args("run", "--set train.task=mlm")),
                    "eval.multiple_choice = \"" + items_ + "\" is for train.task = \"lm\", not \"mlm\"");
    expect_one_line(run_lmforge(train_args("run", "--set model.preset=bert-tiny")),
                    "needs a GPT-2 model, not the encoder model.preset = \"bert-tiny\"");
    EXPECT_FALSE(fs::exists(path("run")));
}

}  // namespace
}  // namespace lmforge
