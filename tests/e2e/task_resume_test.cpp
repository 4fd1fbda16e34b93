// Every task (lm, classify with GPT-2 and BERT, mlm, sft) has every guarantee of the one
// trainer: a run killed with kill -9 at random steps, several times (once inside a
// checkpoint's save), and resumed, ends with the metrics of an uninterrupted run at every step,
// bit for bit, and the same final weights, optimizer state and report; SIGTERM finishes the
// step, saves, exits 128 + 15, and the same command goes on to the same end; and resuming a
// run directory of another task or model, on changed data, or with another global batch of an
// epoch-based task, is one line and exit 2 with nothing overwritten.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "cli_util.h"
#include "task_runs.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;
using test::run_lmforge;

class TaskResume : public test::TempDirTest, public ::testing::WithParamInterface<test::TaskCase> {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        data_ = test::prepare_task_data(*this, GetParam());
    }
    int batch() const { return GetParam().task == "classify" || GetParam().task == "sft" ? 16 : 8; }
    std::string config(const std::string& run) { return test::task_config(*this, GetParam(), data_, run, batch()); }

    // The run ends as `straight` did: metrics at every step, final weights and optimizer state,
    // best/ and the report.
    void expect_same_end(const std::string& straight, const std::string& run) {
        const auto a = test::stable_metrics(path(straight)), b = test::stable_metrics(path(run));
        ASSERT_EQ(b.size(), a.size()) << run;
        for (size_t i = 0; i < a.size(); i++) EXPECT_EQ(b[i], a[i]) << run << ": metrics line " << i;
        for (const char* f : {"final/model.safetensors", "final/optimizer.safetensors", "best/model.safetensors",
                              "test_report.json"}) {
            if (!fs::exists(path(straight + "/" + f))) continue;  // lm and mlm write no report
            EXPECT_EQ(test::slurp(path(run + "/" + f)), test::slurp(path(straight + "/" + f))) << run << ": " << f;
        }
        // The state, but for the wall time its sessions took.
        const auto state = [&](const std::string& r) {
            auto j = nlohmann::json::parse(test::slurp(path(r + "/final/state.json")));
            j.erase("train_seconds");
            return j;
        };
        EXPECT_EQ(state(run), state(straight));
    }

    std::string data_;
};

TEST_P(TaskResume, KilledAtRandomStepsAndResumedEndsAsTheStraightRunBitForBit) {
    const auto straight = run_lmforge("train " + config("straight"));
    ASSERT_EQ(straight.status, 0) << straight.err;
    const int steps = test::last_logged_step(path("straight/metrics.jsonl")) + 1;
    const std::string cfg = config("killed");
    // Once half way through writing the checkpoint of step 14: `latest` still names a whole one.
    const auto in_save = run_lmforge("train " + cfg, "LMFORGE_FAULT_KILL_IN_SAVE=14 ");
    EXPECT_EQ(in_save.status, 128 + SIGKILL) << in_save.err;  // as the shell reports a process SIGKILL ended
    EXPECT_EQ(test::slurp(path("killed/latest")), "step_000007\n");
    std::mt19937 rng(std::random_device{}());
    int kills = 0;
    for (int k = 0; k < 3; k++) {
        const int at = static_cast<int>(rng() % static_cast<unsigned>(steps - 10)) + 2;
        const pid_t pid = test::spawn_lmforge({"train", cfg}, path("killed.log"));
        if (test::signal_at_step(pid, path("killed/metrics.jsonl"), at, SIGKILL)) {
            kills += test::wait_for(pid) == -SIGKILL;
        }
        SCOPED_TRACE("kill -9 after step " + std::to_string(at));
    }
    EXPECT_GE(kills, 1);
    const auto done = run_lmforge("train " + cfg);
    ASSERT_EQ(done.status, 0) << done.err;
    EXPECT_NE(done.err.find("resuming from"), std::string::npos) << done.err;
    expect_same_end("straight", "killed");
}

TEST_P(TaskResume, SigtermSavesAndTheSameCommandGoesOn) {
    ASSERT_EQ(run_lmforge("train " + config("straight")).status, 0);
    const std::string cfg = config("stopped");
    const pid_t pid = test::spawn_lmforge({"train", cfg}, path("stopped.log"));
    ASSERT_TRUE(test::signal_at_step(pid, path("stopped/metrics.jsonl"), 10, SIGTERM)) << test::slurp(path("stopped.log"));
    EXPECT_EQ(test::wait_for(pid), 128 + SIGTERM) << test::slurp(path("stopped.log"));
    const std::string log = test::slurp(path("stopped.log"));
    EXPECT_NE(log.find("stopped by SIGTERM; the same command resumes the run"), std::string::npos) << log;
    EXPECT_FALSE(fs::exists(path("stopped/final")));
    const auto done = run_lmforge("train " + cfg);
    ASSERT_EQ(done.status, 0) << done.err;
    expect_same_end("straight", "stopped");
}

TEST_P(TaskResume, ResumingOtherwiseIsOneLineAndChangesNothing) {
    const std::string base = "train " + config("run") + " --set train.max_steps=20 --set train.epochs=1";
    ASSERT_EQ(run_lmforge(base).status, 0);
    const auto records = [&] {
        return test::slurp(path("run/metrics.jsonl")) + test::slurp(path("run/config.toml")) +
               test::slurp(path("run/latest")) + test::slurp(path("run/final/state.json"));
    };
    const std::string before = records();
    const auto refused = [&](const std::string& args, const std::string& want) {
        const auto o = run_lmforge(base + " --resume " + args);
        EXPECT_EQ(o.status, 2) << args << "\n" << o.err;
        EXPECT_EQ(test::count_lines(o.err), 1) << o.err;
        EXPECT_NE(o.err.find(want), std::string::npos) << o.err;
        EXPECT_EQ(records(), before) << args;
    };
    // Another model: the width (GPT-2's n_embd, BERT's hidden; Llama's MLP width follows it and
    // is named first). (Without the hidden-state term, which would refuse the width first.) LoRA's
    // frozen base refuses the width before the checkpoint is read.
    refused("--set model.n_embd=16 --set distill.cosine_weight=0",
            GetParam().lora ? ", 16] (HINT" : "the checkpoint's model has");
    // Another task on its own data: lm's run directory as sft, every other as lm.
    const test::TaskCase other = GetParam().task == "lm" ? test::task_cases()[4] : test::task_cases()[0];
    const std::string other_data = test::prepare_task_data(*this, other, "other-data");
    refused("--set train.task=" + other.task + " --set model.preset=" + other.preset + " --set data.dir=" + other_data +
                " --set model.block_size=0 --set eval.multiple_choice= --set lora.rank=0",
            "a checkpoint of train.task = \"" + GetParam().task + "\", not \"" + other.task + "\"");
    // Another global batch: 3 sequences a micro-batch do not divide the run's.
    refused("--set train.batch_size=3", "is not a multiple of batch_size · processes = 3");
    // The same task on other data: prepared again from more examples.
    fs::rename(data_, path("kept-data"));
    test::prepare_task_data(*this, GetParam(), "data", 20);
    refused("", "the run trained on other data than data.dir holds now");
    fs::remove_all(data_);
    fs::rename(path("kept-data"), data_);
    const auto again = run_lmforge(base + " --resume");
    EXPECT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.out.find("is complete"), std::string::npos) << again.out;
}

std::string name_of(const ::testing::TestParamInfo<test::TaskCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Tasks, TaskResume, ::testing::ValuesIn(test::task_cases()), name_of);

}  // namespace
}  // namespace lmforge
