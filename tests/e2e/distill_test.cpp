// train.task = "distill" end to end through the CLI: a GPT-2 teacher trained on plenty of text
// teaches a student of its shape that sees only a few thousand characters; at equal steps the
// distilled student ends far below the same student trained alone, which overfits; the soft
// term is logged. Bad teachers fail with one line before anything is written. (Exact resume,
// SIGTERM and 2 ranks = 1 rank with 2B: tests/e2e/task_resume_test.cpp, tests/mpi/.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "task_runs.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

using test::run_lmforge;

class Distill : public test::TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        auto o = run_lmforge("prepare --tokenizer char --input " + write("big.txt", test::task_corpus(3000)) +
                             " --output " + path("big"));
        ASSERT_EQ(o.status, 0) << o.err;
        // Few characters, in the teacher's vocabulary.
        o = run_lmforge("prepare --tokenizer " + path("big") + " --input " +
                        write("small.txt", test::task_corpus(3000).substr(0, 3000)) + " --output " + path("small"));
        ASSERT_EQ(o.status, 0) << o.err;
    }
    // A GPT-2 of 2 layers of width 64 on DATA for STEPS steps, into RUN.
    std::string gpt2_toml(const std::string& data, const std::string& run, int steps) {
        return write(run + ".toml", "[model]\npreset = \"gpt2-nano\"\nn_layer = 2\nn_head = 2\nn_embd = 64\n"
                                    "block_size = 64\n[data]\ndir = \"" + data + "\"\n[train]\nbatch_size = 8\n"
                                    "seq_len = 64\nthreads = 1\nmax_steps = " + std::to_string(steps) +
                                    "\n[optim]\nlr = 3e-3\nwarmup_steps = 10\n[eval]\nevery = 50\nbatches = 8\n"
                                    "[sample]\ncount = 0\n[run]\ndir = \"" + path(run) + "\"\n");
    }
    // The last val_loss and kl in RUN's metrics.jsonl.
    std::pair<double, double> last_val_loss_and_kl(const std::string& run) {
        std::ifstream in(path(run + "/metrics.jsonl"));
        double val = -1, kl = -1;
        for (std::string line; std::getline(in, line);) {
            const auto j = nlohmann::json::parse(line);
            if (j.contains("val_loss")) val = j["val_loss"];
            if (j.contains("kl")) kl = j["kl"];
        }
        return {val, kl};
    }
};

TEST_F(Distill, ADistilledStudentBeatsTheSameStudentTrainedAlone) {
    auto o = run_lmforge("train " + gpt2_toml(path("big"), "teacher", 300));
    ASSERT_EQ(o.status, 0) << o.err;
    o = run_lmforge("train " + gpt2_toml(path("small"), "alone", 200));
    ASSERT_EQ(o.status, 0) << o.err;
    o = run_lmforge("train " + gpt2_toml(path("small"), "distilled", 200) + " --set train.task=distill" +
                    " --set distill.teacher=" + path("teacher/final") + " --set distill.temperature=1" +
                    " --set distill.kl_weight=0.9 --set distill.task_weight=0.1");
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.err.find("distilled from gpt2, 2 layers, 2 heads, width 64"), std::string::npos) << o.err;
    const auto [alone, no_kl] = last_val_loss_and_kl("alone");
    const auto [distilled, kl] = last_val_loss_and_kl("distilled");
    EXPECT_EQ(no_kl, -1);  // only a distillation logs the soft term
    EXPECT_GT(kl, 0);
    EXPECT_LT(distilled, alone - 0.2) << "alone " << alone << ", distilled " << distilled;
}

TEST_F(Distill, BadTeachersFailWithOneLineAndWriteNothing) {
    const auto expect_one_line = [&](const std::string& args, const std::string& needle) {
        const auto o = run_lmforge("train " + gpt2_toml(path("small"), "bad", 5) + " --set train.task=distill " + args);
        EXPECT_EQ(o.status, 2) << o.err;
        EXPECT_NE(o.err.find(needle), std::string::npos) << o.err;
        EXPECT_EQ(test::count_lines(o.err), 1) << o.err;
        EXPECT_FALSE(std::filesystem::exists(path("bad/checkpoints"))) << args;
    };
    expect_one_line("", "distill.teacher = \"\" must name the teacher's checkpoint directory");
    expect_one_line("--set distill.teacher=" + path("nowhere"), path("nowhere/model.safetensors"));
    // A teacher of other characters: another vocabulary.
    std::string digits;
    for (int i = 0; i < 400; i++) digits += std::to_string(i * 7919 % 1000) + (i % 9 == 8 ? ".\n" : " ");
    ASSERT_EQ(run_lmforge("prepare --tokenizer char --input " + write("digits.txt", digits) + " --output " +
                          path("digits"))
                  .status,
              0);
    ASSERT_EQ(run_lmforge("train " + gpt2_toml(path("digits"), "digit-teacher", 1) + " --set train.seq_len=8").status,
              0);
    expect_one_line("--set distill.teacher=" + path("digit-teacher/final"), "distill.teacher: its vocabulary has");
    // A masked LM cannot teach a causal student.
    ASSERT_EQ(run_lmforge("train " + gpt2_toml(path("small"), "bert-teacher", 1) +
                          " --set model.preset=bert-tiny --set model.n_embd=64 --set train.task=mlm")
                  .status,
              0);
    expect_one_line("--set distill.teacher=" + path("bert-teacher/final"), "holds a bert model, and the student is GPT-2");
    expect_one_line("--set distill.teacher=" + path("bert-teacher/final") + " --set distill.temperature=0",
                    "distill.temperature = 0.0 must be a positive number");
}

}  // namespace
}  // namespace lmforge
