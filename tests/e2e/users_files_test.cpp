// lmforge touches only what it made, and trusts no file it reads: a run directory that is the
// user's (its own files, the working directory) is refused whole, never cleaned; in its own
// run directories only its dead processes' temporaries go; logits --output replaces nothing
// unasked; `latest` names a checkpoint of the same run; state.json and optimizer moments
// edited out of range, a split named by a prefix, an .npy header, a config.json or a tokenizer
// that cannot be right: each is one line and exit 2.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "io/safetensors.h"
#include "task_runs.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;
using test::run_lmforge;

class UsersFiles : public test::TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        data_ = test::prepare_task_data(*this, test::task_cases()[0]);
    }
    std::string train_args(const std::string& run_dir, int steps = 8) {
        return "train " + test::task_config(*this, test::task_cases()[0], data_, "cfg", 8) +
               " --set run.dir=" + run_dir + " --set train.max_steps=" + std::to_string(steps) +
               " --set checkpoint.every=4 --set sample.count=0";
    }
    void expect_one_line(const test::Outcome& o, const std::string& want) {
        EXPECT_EQ(o.status, 2) << o.err;
        EXPECT_EQ(test::count_lines(o.err), 1) << o.err;
        EXPECT_NE(o.err.find(want), std::string::npos) << o.err;
    }
    // A finished run "run" whose files the tests then edit.
    std::string finished_run() {
        EXPECT_EQ(run_lmforge(train_args(path("run"))).status, 0);
        return path("run/checkpoints/step_000008");
    }
    std::string data_;
};

const std::vector<std::string> kUsersFiles = {"thesis.tmp", "checkpoints/notes.tmp", ".backup.old-2024/a.txt",
                                              "notes.txt.tmp"};

TEST_F(UsersFiles, ADirectoryOfTheUsersIsRefusedAsRunDirAndKeepsEveryFile) {
    for (const std::string& f : kUsersFiles) write("mine/" + f, "the user's");
    expect_one_line(run_lmforge(train_args(path("mine"))), "not a run directory of lmforge's");
    // The working directory, as run.dir = ".".
    expect_one_line(run_lmforge(train_args("."), "cd " + path("mine") + " && "), "not a run directory of lmforge's");
    for (const std::string& f : kUsersFiles) EXPECT_EQ(test::slurp(path("mine/" + f)), "the user's") << f;
    EXPECT_FALSE(fs::exists(path("mine/config.toml")));
}

TEST_F(UsersFiles, InItsOwnRunDirectoryOnlyItsDeadTemporariesGo) {
    finished_run();
    for (const std::string& f : kUsersFiles) write("run/" + f, "the user's");
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ::waitpid(dead, nullptr, 0);
    const std::string leftover = ".lmforge-tmp.step_000012." + std::string(host) + "." + std::to_string(dead);
    write("run/checkpoints/" + leftover + "/.lmforge-temporary", std::string(host) + " " + std::to_string(dead) + "\n");
    const auto o = run_lmforge(train_args(path("run"), 12));
    ASSERT_EQ(o.status, 0) << o.err;
    for (const std::string& f : kUsersFiles) EXPECT_EQ(test::slurp(path("run/" + f)), "the user's") << f;
    EXPECT_FALSE(fs::exists(path("run/checkpoints/" + leftover)));
}

// A killed prepare, import or export leaves its temporary output: the next command that writes
// in the same directory removes it, whatever output it writes.
TEST_F(UsersFiles, TheNextWriterInADirectoryRemovesAKilledCommandsTemporary) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ::waitpid(dead, nullptr, 0);
    const std::string leftover = "out/.lmforge-tmp.first." + std::string(host) + "." + std::to_string(dead);
    write(leftover + "/.lmforge-temporary", std::string(host) + " " + std::to_string(dead) + "\n");
    write(leftover + "/train_000000.bin", std::string(4096, 'x'));
    write("out/thesis.tmp", "the user's");
    ASSERT_EQ(run_lmforge("prepare --tokenizer char --input " + write("t.txt", test::task_corpus(50)) + " --output " +
                          path("out/second"))
                  .status,
              0);
    EXPECT_FALSE(fs::exists(path(leftover)));
    EXPECT_EQ(test::slurp(path("out/thesis.tmp")), "the user's");
}

TEST_F(UsersFiles, LatestMustNameACheckpointOfTheSameRun) {
    finished_run();
    ASSERT_EQ(run_lmforge(train_args(path("other"))).status, 0);
    const std::string before = test::slurp(path("run/metrics.jsonl"));
    write("run/latest", "../../other/checkpoints/step_000008\n");
    expect_one_line(run_lmforge(train_args(path("run"), 12)), "not a checkpoint of this run (step_N)");
    EXPECT_EQ(test::slurp(path("run/metrics.jsonl")), before);
}

TEST_F(UsersFiles, AStateJsonEditedOutOfRangeIsOneLine) {
    const std::string ckpt = finished_run();
    const std::string original = test::slurp(ckpt + "/state.json");
    const auto edited = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& want) {
        auto j = nlohmann::json::parse(original);
        edit(j);
        write("run/checkpoints/step_000008/state.json", j.dump());
        expect_one_line(run_lmforge(train_args(path("run"), 12)), want);
    };
    edited([](auto& j) { j["data"]["loader"]["cursor"] = -1; }, "\"cursor\" is -1, not a whole number in [0,");
    edited([](auto& j) { j["step"] = 1e30; }, "\"step\" is 1e+30, not a whole number in [0,");
    edited([](auto& j) { j["optimizer_steps"] = -1; }, "\"optimizer_steps\" is -1, not a whole number");
    edited([](auto& j) { j["best_loss"] = -1e9; }, "\"best_loss\" is -1000000000.0, not a number in [0,");
    edited([](auto& j) { j["data"]["loader"].erase("seed"); }, "the data position is damaged");
    write("run/checkpoints/step_000008/state.json", original);
    ASSERT_EQ(run_lmforge(train_args(path("run"), 12)).status, 0);  // the file as it was: resumable
}

TEST_F(UsersFiles, NegativeAdamMomentsAreOneLine) {
    const std::string ckpt = finished_run();
    const SafetensorsReader in(ckpt + "/optimizer.safetensors");
    SafetensorsWriter out;
    std::vector<std::vector<float>> kept;
    for (const std::string& name : in.names()) {
        kept.push_back(in.read_f32(name));
        if (name == "v/wte.weight") kept.back()[3] = -0.5f;
        out.add(name, Dtype::F32, in.info(name).shape, kept.back().data());
    }
    for (const auto& [k, v] : in.metadata()) out.add_metadata(k, v);
    out.write(ckpt + "/optimizer.safetensors");
    expect_one_line(run_lmforge(train_args(path("run"), 12)), "moment v/wte.weight holds -0.5 at element 3");
}

TEST_F(UsersFiles, LogitsReplaceNoFileUnasked) {
    const std::string ckpt = finished_run();
    const std::string weights = test::slurp(ckpt + "/model.safetensors");
    expect_one_line(run_lmforge("logits --checkpoint " + ckpt + " --ids \"1 2\" --output " + ckpt + "/model.safetensors"),
                    "lies inside the input");
    EXPECT_EQ(test::slurp(ckpt + "/model.safetensors"), weights);
    write("mine.safetensors", "the user's");
    expect_one_line(run_lmforge("logits --checkpoint " + ckpt + " --ids \"1 2\" --output " + path("mine.safetensors")),
                    "already exists");
    EXPECT_EQ(test::slurp(path("mine.safetensors")), "the user's");
    EXPECT_EQ(run_lmforge("logits --checkpoint " + ckpt + " --ids \"1 2\" --overwrite --output " +
                          path("mine.safetensors"))
                  .status,
              0);
}

TEST_F(UsersFiles, ASplitIsNamedWhole) {
    const std::string ckpt = finished_run();
    const std::string eval = "eval --checkpoint " + ckpt + " --data " + data_ + " --seq-len 32 --split ";
    expect_one_line(run_lmforge(eval + "\"\""), "\"\" is not a split's name");
    expect_one_line(run_lmforge(eval + "t"), "no t shards");
    EXPECT_EQ(run_lmforge(eval + "val").status, 0);
}

TEST_F(UsersFiles, NumbersInFilesFromElsewhereAreRangeChecked) {
    // An .npy header whose shape is larger than any file.
    std::string header = "{'descr': '<u2', 'fortran_order': False, 'shape': (99999999999999999999999,), }";
    header.resize(118, ' ');
    header += '\n';
    std::string npy = std::string("\x93NUMPY\x01\x00", 8) + std::string(1, static_cast<char>(header.size())) + '\0' + header;
    write("npy/train.npy", npy + std::string(64, '\0'));
    expect_one_line(run_lmforge("data check " + path("npy")), "is larger than any file");
    // A Hugging Face config.json with 2^40 layers.
    const std::string hf = std::string(LMFORGE_FIXTURES_DIR) + "/hf/gpt2-f32";
    fs::copy(hf, path("hf"));
    auto config = nlohmann::json::parse(test::slurp(path("hf/config.json")));
    config["n_layer"] = int64_t{1} << 40;
    write("hf/config.json", config.dump());
    expect_one_line(run_lmforge("import --hf " + path("hf") + " --output " + path("ck")),
                    "the model would hold 1.4e+16 parameters");
    // A tokenizer of 262 tokens beside a model of 101.
    fs::copy(hf, path("hf262"));
    ASSERT_EQ(run_lmforge("tokenizer train --vocab-size 262 --input " + write("corpus.txt", test::task_corpus(200)) +
                          " --output " + path("tok"))
                  .status,
              0);
    fs::copy(path("tok/encoder.json"), path("hf262/vocab.json"));
    fs::copy(path("tok/vocab.bpe"), path("hf262/merges.txt"));
    expect_one_line(run_lmforge("import --hf " + path("hf262") + " --output " + path("ck")),
                    "its tokenizer has 262 tokens, the model's vocabulary 101");
    EXPECT_FALSE(fs::exists(path("ck")));
}

}  // namespace
}  // namespace lmforge
