// lmforge train with train.task = "classify", end to end on labelled texts made here: a class
// that a word gives away must be learned well above the baselines; the report (table and
// JSON) holds every figure; bad labelled data fails with one line. (Under mpirun:
// tests/mpi/classify_mpi_test.cpp.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_util.h"
#include "labelled_texts.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

using test::run_lmforge;

class Classify : public test::TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        const std::string jsonl = write("texts.jsonl", test::labelled_texts(600));
        const auto o = run_lmforge("prepare --tokenizer char --input " + jsonl + " --label-field label --max-len 48 "
                                   "--output " + path("data"));
        ASSERT_EQ(o.status, 0) << o.err;
    }
    std::string config(const std::string& run) {
        return write(run + ".toml", "[model]\npreset = \"gpt2-nano\"\nn_layer = 2\nn_head = 2\nn_embd = 32\n"
                                    "[data]\ndir = \"" + path("data") + "\"\n[train]\ntask = \"classify\"\n"
                                    "batch_size = 16\nepochs = 6\nthreads = 1\n[optim]\nlr = 3e-3\nwarmup_steps = 10\n"
                                    "[eval]\nevery = 0\nmetric = \"macro_f1\"\n[run]\ndir = \"" + path(run) + "\"\n");
    }
};

TEST_F(Classify, LearnsAboveTheBaselinesAndReportsEveryFigure) {
    const auto o = run_lmforge("train " + config("run"));
    ASSERT_EQ(o.status, 0) << o.err;
    for (const char* needle : {"precision", "macro avg", "weighted avg", "confusion matrix", "majority class",
                               "bag of words", "best/ from step"}) {
        EXPECT_NE(o.out.find(needle), std::string::npos) << needle << "\n" << o.out;
    }
    std::ifstream in(path("run/test_report.json"));
    const auto j = nlohmann::json::parse(in);
    const double accuracy = j["model"]["accuracy"], majority = j["baselines"]["majority_class"]["accuracy"];
    EXPECT_GT(accuracy, 0.9) << j.dump(2);
    EXPECT_LT(majority, 0.5);
    EXPECT_EQ(j["model"]["labels"], (std::vector<std::string>{"food", "sport", "weather"}));
    EXPECT_EQ(j["model"]["total"], 60);  // the default test fraction, 0.1 of 600
    EXPECT_TRUE(std::filesystem::exists(path("run/best/model.safetensors")));
    EXPECT_TRUE(std::filesystem::exists(path("run/final/model.safetensors")));
    EXPECT_TRUE(std::filesystem::exists(path("run/plots/loss.png")));  // log.plots, by step
    EXPECT_NE(test::slurp(path("run/plots/loss.svg")).find(">step (epochs of 30)</text>"), std::string::npos);
    // Metrics by step, with the epoch as a field: a validation at each epoch's end (eval.every 0).
    std::ifstream metrics(path("run/metrics.jsonl"));
    int val_lines = 0, train_lines = 0;
    for (std::string line; std::getline(metrics, line);) {
        const auto m = nlohmann::json::parse(line);
        if (m.contains("val_accuracy")) {
            val_lines++;
            EXPECT_EQ(m["step"].get<int>(), 30 * m["epoch"].get<int>()) << line;  // 480 examples, 16 a step
        }
        if (m.contains("loss")) train_lines += m["epoch"] == m["step"].get<int>() / 30 + 1;
    }
    EXPECT_EQ(val_lines, 6);
    EXPECT_EQ(train_lines, 180);
    EXPECT_EQ(j["best_step"].get<int>() % 30, 0) << j.dump(2);
    // The export names the classes as the run did, for transformers' id2label.
    const auto e = run_lmforge("export --checkpoint " + path("run/best") + " --hf " + path("hf"));
    ASSERT_EQ(e.status, 0) << e.err;
    std::ifstream hf_config(path("hf/config.json"));
    const auto hf = nlohmann::json::parse(hf_config);
    EXPECT_EQ(hf["id2label"]["1"], "sport") << hf.dump(2);
    EXPECT_EQ(hf["label2id"]["weather"], 2) << hf.dump(2);
    // Its best/ starts a classifier of two of the classes: the body is loaded, the head of
    // three classes is not (it was refused for its shape).
    std::string two_classes;
    std::istringstream lines(test::labelled_texts(200));
    for (std::string line; std::getline(lines, line);) {
        if (line.find("\"weather\"") == std::string::npos) two_classes += line + "\n";
    }
    ASSERT_EQ(run_lmforge("prepare --tokenizer char --input " + write("two.jsonl", two_classes) +
                          " --label-field label --max-len 48 --output " + path("two")).status,
              0);
    const auto from_best = run_lmforge("train " + config("from-best") + " --set data.dir=" + path("two") +
                                       " --set model.init_from=" + path("run/best") + " --set train.epochs=1");
    ASSERT_EQ(from_best.status, 0) << from_best.err;
    EXPECT_NE(from_best.err.find("(new: score.weight (the file's is for 3 classes))"), std::string::npos) << from_best.err;
    // Refused reruns (model.init_from names no checkpoint; fewer epochs than the run has
    // trained) leave the finished run's records as they were.
    const std::string metrics_before = test::slurp(path("run/metrics.jsonl"));
    const std::string config_before = test::slurp(path("run/config.toml"));
    const auto refused = run_lmforge("train " + config("run") + " --set model.init_from=" + path("no-such-run"));
    EXPECT_EQ(refused.status, 2) << refused.err;
    const auto shorter = run_lmforge("train " + config("run") + " --set train.epochs=1");
    EXPECT_EQ(shorter.status, 2) << shorter.err;
    EXPECT_NE(shorter.err.find("train.epochs = 1 is below the step the run has reached (180)"), std::string::npos)
        << shorter.err;
    EXPECT_EQ(test::slurp(path("run/metrics.jsonl")), metrics_before);
    EXPECT_EQ(test::slurp(path("run/config.toml")), config_before);
    // The finished run resumes as complete: its last evaluation and report again, the same
    // metrics.
    const auto again = run_lmforge("train " + config("run") + " --resume");
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.out.find("is complete at step 180"), std::string::npos) << again.out;
    EXPECT_NE(again.out.find("confusion matrix"), std::string::npos) << again.out;
    EXPECT_EQ(test::slurp(path("run/metrics.jsonl")), metrics_before);
}

TEST_F(Classify, BadLabelledDataFailsWithOneLine) {
    // Token shards for language modelling are not labelled data.
    const std::string text = write("plain.txt", "some plain text to tokenize for a language model\n");
    ASSERT_EQ(run_lmforge("prepare --tokenizer char --input " + text + " --output " + path("lm")).status, 0);
    const auto o = run_lmforge("train " + config("bad") + " --set data.dir=" + path("lm"));
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_NE(o.err.find("no labels.json"), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    // An empty text in the labelled file is named by line.
    const std::string empty = write("empty.jsonl", "{\"text\": \"ok\", \"label\": \"a\"}\n{\"text\": \"\", \"label\": \"b\"}\n");
    const auto p = run_lmforge("prepare --tokenizer char --input " + empty + " --label-field label --output " + path("e"));
    EXPECT_EQ(p.status, 2);
    EXPECT_NE(p.err.find(":2: empty text"), std::string::npos) << p.err;
    // No validation split: no epoch could be chosen as best (each scored 0 and the first stayed).
    const std::string jsonl = write("few.jsonl", test::labelled_texts(60));
    ASSERT_EQ(run_lmforge("prepare --tokenizer char --input " + jsonl + " --label-field label --val-fraction 0 "
                          "--output " + path("noval")).status,
              0);
    const auto v = run_lmforge("train " + config("noval-run") + " --set data.dir=" + path("noval"));
    EXPECT_EQ(v.status, 2) << v.err;
    EXPECT_NE(v.err.find("the validation split is empty"), std::string::npos) << v.err;
}

}  // namespace
}  // namespace lmforge
