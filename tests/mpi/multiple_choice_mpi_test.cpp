// Multiple-choice evaluation under mpirun: items sharded over 2 ranks, counts summed, give
// the report of one process; so do those an lm run on 2 ranks logs as it trains
// (eval.multiple_choice), checked against one process's `lmforge eval` of its checkpoints.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "ascii_tokenizer.h"
#include "cli_util.h"
#include "task_runs.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

class MultipleChoiceMpi : public test::TempDirTest {};

TEST_F(MultipleChoiceMpi, TwoRanksReportAsOne) {
    const std::string model_dir = std::string(LMFORGE_FIXTURES_DIR) + "/hf/gpt2-f32";
    ASSERT_EQ(test::run_lmforge("import --hf " + model_dir + " --output " + path("ckpt")).status, 0);
    write("tok/tokenizer.json", test::ascii_tokenizer_json());
    std::string jsonl;
    for (int i = 0; i < 9; i++) {  // odd: the ranks get 5 and 4 items
        jsonl += nlohmann::json{{"ctx", "It was " + std::string(1 + i, 'o')},
                                {"endings", {"cold", "a dark night", "late", "calm seas"}}, {"label", i % 4}}.dump() + "\n";
    }
    const std::string items = write("items.jsonl", jsonl);
    const std::string args = "eval --checkpoint " + path("ckpt") + " --multiple-choice " + items + " --tokenizer " +
                             path("tok");
    const auto one = test::run_lmforge(args);
    ASSERT_EQ(one.status, 0) << one.err;
    const auto two = test::run_lmforge_mpi(2, args);
    ASSERT_EQ(two.status, 0) << two.err;
    const auto a = nlohmann::json::parse(one.out), b = nlohmann::json::parse(two.out);
    EXPECT_EQ(b["processes"], 2);
    EXPECT_EQ(b["items"], 9);
    EXPECT_EQ(b["accuracy"], a["accuracy"]);
    EXPECT_EQ(b["accuracy_norm"], a["accuracy_norm"]);
}

// step -> metrics.jsonl's multiple-choice line of that step.
std::map<int, nlohmann::json> choice_lines(const std::string& run_dir) {
    std::map<int, nlohmann::json> lines;
    std::ifstream in(run_dir + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line);
        if (j.contains("mc_accuracy")) lines[j["step"].get<int>()] = j;
    }
    return lines;
}

TEST_F(MultipleChoiceMpi, TrainingOnTwoRanksLogsTheCountsOfOneProcess) {
    const test::TaskCase& lm = test::task_cases()[0];
    const std::string data = test::prepare_task_data(*this, lm);
    const std::string items = test::multiple_choice_items(*this, 9, "hellaswag.jsonl");  // odd: 5 and 4 a rank
    const auto args = [&](const std::string& run, int batch) {
        return "train " + test::task_config(*this, lm, data, run, batch, "fp32") +
               " --set train.max_steps=14 --set checkpoint.keep_last=10 --set sample.count=0 --set sample.every=0" +
               " --set eval.multiple_choice=" + items + " --set eval.multiple_choice_every=7";
    };
    const auto two = test::run_lmforge_mpi(2, args("two", 4));
    ASSERT_EQ(two.status, 0) << two.err;
    const auto one = test::run_lmforge(args("one", 8));
    ASSERT_EQ(one.status, 0) << one.err;
    const auto logged = choice_lines(path("two"));
    ASSERT_EQ(logged.size(), 3u);  // steps 0, 7 and 14
    // Step 0: the same initial weights on one process and on two.
    const auto one_process = choice_lines(path("one"));
    for (const char* key : {"mc_items", "mc_correct", "mc_correct_norm", "mc_accuracy", "mc_accuracy_norm"}) {
        EXPECT_EQ(logged.at(0)[key], one_process.at(0)[key]) << key;
    }
    // Later steps: the 2-rank run's own weights, evaluated by one process.
    for (const int step : {7, 14}) {
        const std::string checkpoint = path("two/checkpoints/" + fmt::format("step_{:06d}", step));
        const auto e =
            test::run_lmforge("eval --checkpoint " + checkpoint + " --multiple-choice " + items + " --threads 1");
        ASSERT_EQ(e.status, 0) << e.err;
        const auto want = nlohmann::json::parse(e.out);
        const nlohmann::json& got = logged.at(step);
        EXPECT_EQ(got["mc_items"], 9);
        EXPECT_EQ(got["mc_correct"], want["correct"]) << "step " << step;
        EXPECT_EQ(got["mc_correct_norm"], want["correct_norm"]) << "step " << step;
        EXPECT_EQ(got["mc_accuracy"], want["accuracy"]) << "step " << step;
        EXPECT_EQ(got["mc_accuracy_norm"], want["accuracy_norm"]) << "step " << step;
    }
}

}  // namespace
}  // namespace lmforge
