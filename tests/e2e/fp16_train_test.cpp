// train.precision = "fp16" end to end: an overflow injected through a loss scale of 2^40 skips
// steps and halves the scale until the gradients fit fp16, then the run learns; a skipped step
// leaves the weights as they were; a short run ends within 1% of fp32's validation loss; and
// what cannot run fp16 is refused with one line. (Exact resume with the scaler's state:
// tests/e2e/task_resume_test.cpp's lm_fp16.)
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "task_runs.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

using test::run_lmforge;

class Fp16Train : public test::TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        const auto o = run_lmforge("prepare --tokenizer char --input " + write("corpus.txt", test::task_corpus(3000)) +
                                   " --output " + path("data"));
        ASSERT_EQ(o.status, 0) << o.err;
    }
    std::string train(const std::string& run, const std::string& precision, int steps, const std::string& more = "") {
        const std::string toml =
            "[model]\npreset = \"gpt2-nano\"\nn_layer = 2\nn_head = 2\nn_embd = 32\nblock_size = 32\n[data]\ndir = \"" +
            path("data") + "\"\n[train]\nbatch_size = 8\nseq_len = 32\nthreads = 1\nmax_steps = " +
            std::to_string(steps) + "\nprecision = \"" + precision + "\"\n[optim]\nlr = 3e-3\nwarmup_steps = 5\n"
            "[eval]\nevery = 0\nbatches = 8\n[sample]\ncount = 0\n[run]\ndir = \"" + path(run) + "\"\n";
        return "train " + write(run + ".toml", toml) + more;
    }
    std::vector<nlohmann::json> train_lines(const std::string& run) {
        std::vector<nlohmann::json> lines;
        std::ifstream in(path(run + "/metrics.jsonl"));
        for (std::string line; std::getline(in, line);) {
            auto j = nlohmann::json::parse(line);
            if (j.contains("loss")) lines.push_back(std::move(j));
        }
        return lines;
    }
};

TEST_F(Fp16Train, AnOverflowSkipsTheStepAndHalvesTheScaleUntilTheGradientsFit) {
    const auto o = run_lmforge(train("run", "fp16", 60, " --set train.loss_scale=1099511627776"));  // 2^40
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.err.find("step      0: the gradients overflowed at loss scale 1.09951e+12: step skipped"),
              std::string::npos)
        << o.err;
    const auto lines = train_lines("run");
    ASSERT_EQ(lines.size(), 60u);
    EXPECT_TRUE(lines[0]["grad_norm"].is_null());
    EXPECT_EQ(lines[0]["loss_scale"].get<double>(), std::ldexp(1.0, 39));
    EXPECT_EQ(lines[0]["skipped_steps"].get<int>(), 1);
    // Halved at each overflow, then kept: the steps skipped are the halvings.
    const int skipped = lines.back()["skipped_steps"];
    EXPECT_GT(skipped, 1);
    EXPECT_LT(skipped, 30);
    EXPECT_EQ(lines.back()["loss_scale"].get<double>(), std::ldexp(1.0, 40 - skipped));
    EXPECT_TRUE(lines[skipped]["grad_norm"].is_number()) << lines[skipped].dump();
    EXPECT_LT(lines.back()["loss"].get<double>(), lines[skipped]["loss"].get<double>() - 0.5);
}

// Steps 1 and 2 overflow too (2^38 and 2^37 are still far too large): the checkpoints after
// steps 1 and 3 hold the same weights and moments; with the default scale, steps move them.
TEST_F(Fp16Train, ASkippedStepLeavesTheWeightsAsTheyWere) {
    const std::string every_step = " --set checkpoint.every=1 --set checkpoint.keep_last=3";
    ASSERT_EQ(run_lmforge(train("skipped", "fp16", 3, every_step + " --set train.loss_scale=1099511627776")).status, 0);
    ASSERT_EQ(run_lmforge(train("taken", "fp16", 3, every_step)).status, 0);
    for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
        const auto at = [&](const std::string& run, int step) {
            return test::slurp(path(run + "/checkpoints/step_00000" + std::to_string(step) + "/" + file));
        };
        EXPECT_EQ(at("skipped", 1), at("skipped", 3)) << file;
        EXPECT_NE(at("taken", 1), at("taken", 3)) << file;
    }
}

TEST_F(Fp16Train, EndsWithinOnePercentOfFp32sValidationLoss) {
    ASSERT_EQ(run_lmforge(train("fp32", "fp32", 150)).status, 0);
    ASSERT_EQ(run_lmforge(train("fp16", "fp16", 150)).status, 0);
    const auto val_loss = [&](const std::string& run) {
        double v = -1;
        std::ifstream in(path(run + "/metrics.jsonl"));
        for (std::string line; std::getline(in, line);) {
            const auto j = nlohmann::json::parse(line);
            if (j.contains("val_loss")) v = j["val_loss"];
        }
        return v;
    };
    const double fp32 = val_loss("fp32"), fp16 = val_loss("fp16");
    EXPECT_LT(fp32, 2.5);  // it learnt
    EXPECT_NEAR(fp16, fp32, 0.01 * fp32);
}

TEST_F(Fp16Train, WhatCannotRunFp16IsRefusedWithOneLine) {
    const auto expect_one_line = [&](const std::string& args, const std::string& prefix, const std::string& needle) {
        const auto o = run_lmforge(args, prefix);
        EXPECT_EQ(o.status, 2) << o.err;
        EXPECT_NE(o.err.find(needle), std::string::npos) << o.err;
        EXPECT_EQ(test::count_lines(o.err), 1) << o.err;
    };
    // Kernels without F16C: the portable build's baseline level (x86-64-v2).
    expect_one_line(train("baseline", "fp16", 2), "LMFORGE_ISA=baseline ",
                    "train.precision = \"fp16\" needs F16C conversions, which the baseline kernel level");
    expect_one_line(train("zero", "fp16", 2, " --set train.loss_scale=0"), "",
                    "train.loss_scale = 0.0 must be a positive number");
    expect_one_line(train("half", "fp8", 2), "", "train.precision = \"fp8\" must be fp32, bf16, fp16 or auto");
}

}  // namespace
}  // namespace lmforge
