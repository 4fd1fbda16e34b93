// lmforge train end to end, on a small character-level corpus made here: exact resume after
// kill -9 (also mid-save) and after Ctrl-C's stop at a step, the run directory's outputs (metrics, plots, TensorBoard events),
// and bad input (config types, missing data, another model's checkpoint, an unwritable run
// directory, a disk that fills during a checkpoint).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <zlib.h>

#include "cli_util.h"
#include "io/safetensors.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;
using test::run_lmforge;

// Sentences of common words in a seeded order: text a model can learn from.
std::string make_corpus(size_t bytes) {
    const char* words[] = {"the", "sea", "whale", "ship", "captain", "and", "of", "a", "white", "was", "to", "in",
                           "old", "storm", "harpoon", "deck", "sailor", "night", "wind", "wave"};
    std::mt19937 rng(3);
    std::string text;
    while (text.size() < bytes) {
        const int n = 4 + static_cast<int>(rng() % 8);
        for (int i = 0; i < n; i++) text += std::string(i ? " " : "") + words[rng() % 20];
        text += rng() % 4 == 0 ? ".\n" : ". ";
    }
    return text;
}

class TrainRun : public test::TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        const std::string text = write("corpus.txt", make_corpus(200000));
        const auto o = run_lmforge("prepare --tokenizer char --input " + text + " --output " + path("data"));
        ASSERT_EQ(o.status, 0) << o.err;
    }
    // A small model, every step logged; checkpoint_every 1 makes kills land mid-save too.
    std::string config(const std::string& name, int steps, int checkpoint_every, const std::string& extra = "") {
        return write(name + ".toml", "[model]\npreset = \"gpt2-nano\"\nn_layer = 2\nn_head = 4\nn_embd = 64\n"
                                     "block_size = 64\n[data]\ndir = \"" + path("data") + "\"\n"
                                     "[train]\nbatch_size = 4\nseq_len = 64\nmax_steps = " + std::to_string(steps) +
                                     "\nthreads = 2\ntotal_batch_tokens = 512\n[optim]\nlr = 3e-3\nwarmup_steps = 5\n"
                                     "[eval]\nevery = 10\nbatches = 3\n[checkpoint]\nevery = " +
                                     std::to_string(checkpoint_every) + "\nkeep_last = 2\n[log]\nevery = 5\n"
                                     "[sample]\ncount = 0\n[run]\ndir = \"" + path("runs/" + name) + "\"\n" + extra);
    }
    // step -> loss, from a run's metrics.jsonl (exactly one training line per step expected).
    std::map<int64_t, double> losses(const std::string& run) {
        std::map<int64_t, double> out;
        std::ifstream in(path("runs/" + run + "/metrics.jsonl"));
        for (std::string line; std::getline(in, line);) {
            const auto j = nlohmann::json::parse(line);
            if (j.contains("loss")) {
                EXPECT_EQ(out.count(j["step"]), 0u) << "step " << j["step"] << " logged twice";
                out[j["step"]] = j["loss"];
            }
        }
        return out;
    }
};

TEST_F(TrainRun, KilledAndResumedRunEqualsTheStraightRunBitForBit) {
    const int steps = 120;
    ASSERT_EQ(run_lmforge("train " + config("straight", steps, 1)).status, 0);
    const std::string cfg = config("killed", steps, 1);
    std::mt19937 rng(11);
    int kills = 0;
    for (int attempt = 0; attempt < 6; attempt++) {  // kill -9 at random moments, resume each time
        const pid_t pid = test::spawn_lmforge({"train", cfg}, path("killed.log"));
        std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 300));
        ::kill(pid, SIGKILL);
        if (test::wait_for(pid) == -SIGKILL) kills++;
        // Whatever the moment, `latest` names a whole, loadable checkpoint.
        std::ifstream latest(path("runs/killed/latest"));
        std::string name;
        if (latest >> name) {
            const auto e = run_lmforge("eval --batches 1 --seq-len 64 --checkpoint " + path("runs/killed/checkpoints/" + name) +
                                       " --data " + path("data"));
            ASSERT_EQ(e.status, 0) << "checkpoint " << name << " after a kill: " << e.err;
        }
    }
    EXPECT_GE(kills, 3) << "the runs finished before they could be killed: make them longer";
    const auto done = run_lmforge("train " + cfg);
    ASSERT_EQ(done.status, 0) << done.err;
    const auto a = losses("straight"), b = losses("killed");
    ASSERT_EQ(a.size(), static_cast<size_t>(steps));
    ASSERT_EQ(b.size(), a.size());
    for (const auto& [step, loss] : a) EXPECT_EQ(b.at(step), loss) << "step " << step;  // bitwise
    const std::string last = "/checkpoints/step_000120/";
    for (const char* f : {"model.safetensors", "optimizer.safetensors"}) {
        EXPECT_EQ(test::slurp(path("runs/straight" + last + f)), test::slurp(path("runs/killed" + last + f))) << f;
    }
    EXPECT_FALSE(fs::exists(path("runs/killed/checkpoints/step_000001")));  // keep_last pruned the rest
}

TEST_F(TrainRun, Bf16MomentsHalveTheOptimizerStateAndResumeBitForBit) {
    const std::string half = " --set optim.moments=bf16 --set log.every=1";
    const auto straight = run_lmforge("train " + config("straight", 20, 10) + half);
    ASSERT_EQ(straight.status, 0) << straight.err;
    const auto full = run_lmforge("train " + config("full", 20, 10));
    ASSERT_EQ(full.status, 0) << full.err;
    // "optimizer state 1.2 MB on this process (moments in bf16)": half fp32's figure.
    const auto state_mb = [](const std::string& log, const std::string& precision) {
        const size_t end = log.find(" MB on this process (moments in " + precision + ")");
        EXPECT_NE(end, std::string::npos) << log;
        const size_t begin = log.rfind("optimizer state ", end) + std::string("optimizer state ").size();
        return std::stod(log.substr(begin, end - begin));
    };
    EXPECT_NEAR(state_mb(straight.err, "bf16"), state_mb(full.err, "fp32") / 2, 0.1);
    const std::string last = path("runs/straight/checkpoints/step_000020/optimizer.safetensors");
    EXPECT_EQ(SafetensorsReader(last).info("v/wte.weight").dtype, Dtype::BF16);
    const std::string saved = test::slurp(last);

    // Back to step 10 and on again: the same bits, as rounding draws from (element, step).
    const std::string cfg = path("straight.toml");
    fs::copy(path("runs/straight"), path("runs/again"), fs::copy_options::recursive);
    fs::remove_all(path("runs/again/checkpoints/step_000020"));
    write("runs/again/latest", "step_000010\n");
    std::ofstream(path("runs/again/metrics.jsonl"), std::ios::trunc).close();
    const auto again = run_lmforge("train " + cfg + half + " --set run.dir=" + path("runs/again"));
    ASSERT_EQ(again.status, 0) << again.err;
    const auto a = losses("straight"), b = losses("again");
    ASSERT_EQ(b.size(), 10u);  // steps 10 to 19 (0-based), after the checkpoint of 10 done
    for (const auto& [step, loss] : b) EXPECT_EQ(loss, a.at(step)) << "step " << step;
    EXPECT_EQ(test::slurp(path("runs/again/checkpoints/step_000020/optimizer.safetensors")), saved);

    // A bf16 checkpoint resumed with fp32 moments: widened exactly, so the run goes on as the
    // bf16 one would, but for the rounding of each later step.
    fs::copy(path("runs/straight"), path("runs/wide"), fs::copy_options::recursive);
    fs::remove_all(path("runs/wide/checkpoints/step_000020"));
    write("runs/wide/latest", "step_000010\n");
    std::ofstream(path("runs/wide/metrics.jsonl"), std::ios::trunc).close();
    const auto wide = run_lmforge("train " + cfg + " --set log.every=1 --set run.dir=" + path("runs/wide"));
    ASSERT_EQ(wide.status, 0) << wide.err;
    const auto w = losses("wide");
    ASSERT_EQ(w.size(), 10u);
    EXPECT_EQ(w.at(10), a.at(10));  // from the checkpoint's weights, before the moments act
    for (const auto& [step, loss] : w) EXPECT_NEAR(loss, a.at(step), 2e-3 * a.at(step)) << "step " << step;
    EXPECT_EQ(SafetensorsReader(path("runs/wide/checkpoints/step_000020/optimizer.safetensors")).info("v/wte.weight").dtype,
              Dtype::F32);
}

TEST_F(TrainRun, Bf16GradientsTrainAsFp32OnesAndResumeBitForBit) {
    // Two micro-steps a step (total_batch_tokens = 2 B·T): bf16 gradients accumulate too.
    const std::string bf16 = " --set train.precision=bf16 --set log.every=1";
    const auto rounded = run_lmforge("train " + config("rounded", 20, 10) + bf16 + " --set train.grads=bf16");
    ASSERT_EQ(rounded.status, 0) << rounded.err;
    const auto exact = run_lmforge("train " + config("exact", 20, 10) + bf16);
    ASSERT_EQ(exact.status, 0) << exact.err;
    const auto a = losses("rounded"), b = losses("exact");
    ASSERT_EQ(a.size(), 20u);
    EXPECT_EQ(a.at(0), b.at(0));  // the same forward before any update
    for (const auto& [step, loss] : a) EXPECT_NEAR(loss, b.at(step), 2e-2 * b.at(step)) << "step " << step;
    EXPECT_LT(a.at(19), a.at(0) - 0.5);

    // Back to step 10 and on again: gradients are not checkpointed, and rounding them is
    // deterministic, so the resumed run repeats the straight one's losses to the bit.
    fs::copy(path("runs/rounded"), path("runs/again"), fs::copy_options::recursive);
    fs::remove_all(path("runs/again/checkpoints/step_000020"));
    write("runs/again/latest", "step_000010\n");
    std::ofstream(path("runs/again/metrics.jsonl"), std::ios::trunc).close();
    const auto again = run_lmforge("train " + path("rounded.toml") + bf16 + " --set train.grads=bf16 --set run.dir=" +
                                   path("runs/again"));
    ASSERT_EQ(again.status, 0) << again.err;
    const auto c = losses("again");
    ASSERT_EQ(c.size(), 10u);
    for (const auto& [step, loss] : c) EXPECT_EQ(loss, a.at(step)) << "step " << step;

    const auto fp32 =
        run_lmforge("train " + config("fp32", 2, 10) + " --set train.precision=fp32 --set train.grads=bf16");
    EXPECT_NE(fp32.status, 0);
    EXPECT_NE(fp32.err.find("bf16 gradients need mixed precision"), std::string::npos) << fp32.err;
}

TEST_F(TrainRun, AKillInTheMiddleOfASaveLeavesThePreviousCheckpointLoadable) {
    const std::string cfg = config("midsave", 40, 10);
    // The process kills itself after writing step 20's weights, before the rest of the save.
    const int status = std::system(("LMFORGE_FAULT_KILL_IN_SAVE=20 " + std::string(LMFORGE_BINARY) + " train " + cfg +
                                    " >/dev/null 2>&1").c_str());
    EXPECT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL)) << status;
    EXPECT_EQ(test::slurp(path("runs/midsave/latest")), "step_000010\n");
    bool partial = false;  // the half-written save is there, aside, never under its final name
    for (const auto& e : fs::directory_iterator(path("runs/midsave/checkpoints"))) {
        partial |= e.path().filename().string().find(".lmforge-tmp.step_000020.") == 0;
    }
    EXPECT_TRUE(partial);
    EXPECT_FALSE(fs::exists(path("runs/midsave/checkpoints/step_000020")));
    const auto resumed = run_lmforge("train " + cfg);
    ASSERT_EQ(resumed.status, 0) << resumed.err;
    EXPECT_NE(resumed.err.find("resuming from " + path("runs/midsave/checkpoints/step_000010")), std::string::npos);
    for (const auto& e : fs::directory_iterator(path("runs/midsave/checkpoints"))) {
        EXPECT_EQ(e.path().filename().string().find(".lmforge-tmp."), std::string::npos) << "left behind: " << e.path();
    }
}

TEST_F(TrainRun, CtrlCStopsAfterAStepWithACheckpointAndTheSameCommandGoesOnBitForBit) {
    // A constant rate after warm-up: max_steps does not shape the schedule, so the stopped run
    // can be given an end 10 steps past wherever the signal met it, and compared with a
    // straight run of as many steps.
    const std::string cfg = config("stopped", 1000000, 0) + " --set optim.schedule=constant";
    const pid_t pid = test::spawn_lmforge({"train", path("stopped.toml"), "--set", "optim.schedule=constant"},
                                          path("stopped.log"));
    // Three steps done: the request is heard from before the first step on.
    EXPECT_TRUE(test::wait_for_steps(path("runs/stopped/metrics.jsonl"), 3, std::chrono::seconds(120)));
    ::kill(pid, SIGINT);
    EXPECT_EQ(test::wait_for(pid), 128 + SIGINT);  // as a shell reports Ctrl-C
    const std::string log = test::slurp(path("stopped.log"));
    const std::string latest = test::slurp(path("runs/stopped/latest"));
    ASSERT_EQ(latest.substr(0, 5), "step_") << log;
    const int k = std::stoi(latest.substr(5));
    EXPECT_GE(k, 3) << log;
    EXPECT_NE(log.find("stopped " + path("runs/stopped") + " at step " + std::to_string(k) + " by SIGINT"),
              std::string::npos) << log;
    EXPECT_EQ(losses("stopped").size(), static_cast<size_t>(k)) << "the steps before the stop, each once";

    const std::string end = " --set train.max_steps=" + std::to_string(k + 10);
    const auto resumed = run_lmforge("train " + cfg + end);
    ASSERT_EQ(resumed.status, 0) << resumed.err;
    EXPECT_NE(resumed.err.find("resuming from " + path("runs/stopped/checkpoints/" + latest.substr(0, 11))),
              std::string::npos) << resumed.err;
    const auto straight = run_lmforge("train " + config("straight", k + 10, 0) + " --set optim.schedule=constant");
    ASSERT_EQ(straight.status, 0) << straight.err;
    const auto a = losses("straight"), b = losses("stopped");
    ASSERT_EQ(a.size(), static_cast<size_t>(k + 10));
    ASSERT_EQ(b.size(), a.size());
    for (const auto& [step, loss] : a) EXPECT_EQ(b.at(step), loss) << "step " << step;  // bitwise
    char last[64];
    std::snprintf(last, sizeof(last), "/checkpoints/step_%06d/", k + 10);
    for (const char* f : {"model.safetensors", "optimizer.safetensors"}) {
        EXPECT_EQ(test::slurp(path(std::string("runs/straight") + last + f)),
                  test::slurp(path(std::string("runs/stopped") + last + f))) << f;
    }
}

// Two trainings writing one run directory would interleave checkpoints, and the second's
// clean-up would delete the first's half-written files: the second is refused, naming the first.
TEST_F(TrainRun, ASecondTrainingOfTheSameRunDirectoryIsRefusedWhileTheFirstRuns) {
    config("locked", 1000000, 0);
    const pid_t pid = test::spawn_lmforge({"train", path("locked.toml"), "--set", "optim.schedule=constant"},
                                          path("locked.log"));
    ASSERT_TRUE(test::wait_for_steps(path("runs/locked/metrics.jsonl"), 2, std::chrono::seconds(120)));
    const auto second = run_lmforge("train " + path("locked.toml") + " --set train.max_steps=3");
    ::kill(pid, SIGINT);
    EXPECT_EQ(test::wait_for(pid), 128 + SIGINT);
    EXPECT_EQ(second.status, 2) << second.err;
    EXPECT_EQ(test::count_lines(second.err), 1) << second.err;
    EXPECT_NE(second.err.find(path("runs/locked") + ": in use by another lmforge process (pid " + std::to_string(pid) + ")"),
              std::string::npos)
        << second.err;
    // The first ended by its signal: the lock went with it, and the same command goes on.
    const std::string latest = test::slurp(path("runs/locked/latest"));
    ASSERT_EQ(latest.substr(0, 5), "step_") << test::slurp(path("locked.log"));
    const int k = std::stoi(latest.substr(5));
    const auto resumed = run_lmforge("train " + path("locked.toml") + " --set optim.schedule=constant --set train.max_steps=" +
                                     std::to_string(k + 1));
    EXPECT_EQ(resumed.status, 0) << resumed.err;
}

TEST_F(TrainRun, SignalsReachAThreadOfTheirOwnAndNoThreadThatComputes) {
    // oneDNN's JIT GEMMs run with the stack pointer in a heap workspace, where a signal's frame
    // would be written over the heap (core/signal_thread.h). So every thread of a training
    // process (its main thread, OpenMP's worker) blocks SIGINT, SIGTERM and SIGUSR1, but one.
    config("threads", 1000000, 0);
    const pid_t pid = test::spawn_lmforge({"train", path("threads.toml")}, path("threads.log"));
    const bool training = test::wait_for_steps(path("runs/threads/metrics.jsonl"), 3, std::chrono::seconds(120));
    std::vector<std::string> statuses;  // read while it trains, then end it before any assertion
    for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
        statuses.push_back(test::slurp(task.path().string() + "/status"));
    }
    ::kill(pid, SIGKILL);
    test::wait_for(pid);
    ASSERT_TRUE(training) << test::slurp(path("threads.log"));
    const uint64_t handled = (1ull << (SIGINT - 1)) | (1ull << (SIGTERM - 1)) | (1ull << (SIGUSR1 - 1));
    int threads = 0, taking = 0;
    for (const std::string& status : statuses) {
        const size_t at = status.find("SigBlk:");
        ASSERT_NE(at, std::string::npos) << status;
        const uint64_t blocked = std::stoull(status.substr(at + 7), nullptr, 16);
        threads++;
        if ((blocked & handled) == 0) {
            taking++;
        } else {
            EXPECT_EQ(blocked & handled, handled) << status << "blocks only some of them";
        }
    }
    EXPECT_GE(threads, 3) << "main, OpenMP's second thread and the signal thread";
    EXPECT_EQ(taking, 1);
}

// A PNG's chunks: signature, then length, type, data, CRC-32 each; returns the image size.
std::pair<uint32_t, uint32_t> check_png(const std::string& bytes) {
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    size_t at = 8;
    uint32_t w = 0, h = 0;
    std::string idat;
    const auto be32 = [&](size_t p) {
        return (uint32_t(uint8_t(bytes[p])) << 24) | (uint32_t(uint8_t(bytes[p + 1])) << 16) |
               (uint32_t(uint8_t(bytes[p + 2])) << 8) | uint32_t(uint8_t(bytes[p + 3]));
    };
    while (at + 12 <= bytes.size()) {
        const uint32_t len = be32(at);
        const std::string type = bytes.substr(at + 4, 4);
        const uint32_t crc = be32(at + 8 + len);
        EXPECT_EQ(crc, crc32(0, reinterpret_cast<const Bytef*>(bytes.data() + at + 4), len + 4)) << type;
        if (type == "IHDR") w = be32(at + 8), h = be32(at + 12);
        if (type == "IDAT") idat += bytes.substr(at + 8, len);
        at += 12 + len;
    }
    std::vector<uint8_t> raw(static_cast<size_t>(h) * (3 * w + 1));
    uLongf size = raw.size();
    EXPECT_EQ(uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()), Z_OK);
    EXPECT_EQ(size, raw.size());
    return {w, h};
}

TEST_F(TrainRun, RunDirectoryHoldsMetricsPlotsAndEvents) {
    ASSERT_EQ(run_lmforge("train " + config("outputs", 30, 10)).status, 0);
    const auto l = losses("outputs");
    EXPECT_EQ(l.size(), 30u);
    EXPECT_LT(l.at(29), l.at(0) - 0.5) << "the loss falls";
    EXPECT_EQ(check_png(test::slurp(path("runs/outputs/plots/loss.png"))), std::make_pair(900u, 520u));
    const std::string svg = test::slurp(path("runs/outputs/plots/loss.svg"));
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    EXPECT_NE(svg.find("<polyline"), std::string::npos);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
    size_t events = 0;
    for (const auto& e : fs::directory_iterator(path("runs/outputs/tensorboard"))) {
        events += e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
    }
    EXPECT_EQ(events, 1u);
    EXPECT_TRUE(fs::exists(path("runs/outputs/config.toml")));
    // Every checkpoint records the training time so far, not only the last.
    const auto middle = nlohmann::json::parse(test::slurp(path("runs/outputs/checkpoints/step_000020/state.json")));
    EXPECT_GT(middle["train_seconds"].get<double>(), 0.0);
    // A step checkpoint finds the run's tokenizer two levels up (run/checkpoints/step_N).
    const auto sampled = run_lmforge("sample --max-new-tokens 4 --checkpoint " + path("runs/outputs/checkpoints/step_000020"));
    EXPECT_EQ(sampled.status, 0) << sampled.err;
    // A sample longer than the context (54 prompt tokens + 100, context 64) goes on in a sliding
    // window and says so; one that just fills it (54 + 11, the last not fed back) does not; a
    // temperature that is no number is refused (it sampled the least likely tokens).
    const std::string ckpt = " --checkpoint " + path("runs/outputs/checkpoints/step_000020");
    const std::string prompt = " --prompt \"the sea and the white whale of the old ship was in the\"";
    const auto filled = run_lmforge("sample --temperature 0 --max-new-tokens 11" + prompt + ckpt);
    EXPECT_EQ(filled.status, 0) << filled.err;
    EXPECT_EQ(filled.err.find("sliding window"), std::string::npos) << filled.err;
    const auto longer = run_lmforge("sample --temperature 0 --max-new-tokens 100" + prompt + ckpt);
    EXPECT_EQ(longer.status, 0) << longer.err;
    EXPECT_NE(longer.err.find("the sample outgrew the model's context of 64 tokens: past it, each token was drawn "
                              "from the last 32 to 64 tokens (a sliding window)"),
              std::string::npos)
        << longer.err;
    EXPECT_GT(longer.out.size(), filled.out.size());
    const auto nan = run_lmforge("sample --temperature nan" + ckpt);
    EXPECT_EQ(nan.status, 2) << nan.err;
    EXPECT_NE(nan.err.find("--temperature nan must be a finite number"), std::string::npos) << nan.err;
    EXPECT_NE(test::slurp(path("runs/outputs/train.log")).find("val loss"), std::string::npos);
    // Plots on demand give the same files.
    const std::string png = test::slurp(path("runs/outputs/plots/loss.png"));
    ASSERT_EQ(run_lmforge("plot " + path("runs/outputs")).status, 0);
    EXPECT_EQ(test::slurp(path("runs/outputs/plots/loss.png")), png);
}

// Warnings about the settings are said once, on the lead process, and the run goes on.
TEST_F(TrainRun, APeakBelowWhatTheModelReachesAndAWarmupLongerThanTheRunAreSaidOnce) {
    // A peak far below any CPU's: every MFU figure would read above 100%, which the log says, once.
    ASSERT_EQ(run_lmforge("train " + config("peak", 12, 100) + " --set log.peak_gflops=0.001 --set optim.warmup_steps=20")
                  .status,
              0);
    const std::string log = test::slurp(path("runs/peak/train.log"));
    EXPECT_NE(log.find("peak: 0.001 GFLOP/s per process (log.peak_gflops)"), std::string::npos) << log;
    const auto count = [&](const std::string& needle) {
        size_t n = 0;
        for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) n++;
        return n;
    };
    EXPECT_EQ(count("log.peak_gflops = 0.001 is below"), 1u) << log;
    EXPECT_EQ(count("optim.warmup_steps = 20 is not below train.max_steps = 12: the learning rate rises for the whole "
                    "run and never reaches optim.lr"),
              1u)
        << log;
}

void expect_one_line_error(const test::Outcome& o, const std::string& want) {
    EXPECT_NE(o.status, 0) << o.err;
    EXPECT_EQ(test::count_lines(o.err), 1) << o.err;
    EXPECT_NE(o.err.find(want), std::string::npos) << o.err;
}

// A learning rate that wrecks the weights: the run ends on the next checkpoint without writing
// it, so `latest` stays the last good one (here the step-1 one) for a resume at a lower rate.
TEST_F(TrainRun, DivergedWeightsAreNeverSavedAsTheLatestCheckpoint) {
    const std::string cfg = config("diverged", 6, 1);
    ASSERT_EQ(run_lmforge("train " + cfg + " --set train.max_steps=1").status, 0);
    const auto o = run_lmforge("train " + cfg + " --set optim.lr=1e30 --set optim.warmup_steps=0");
    EXPECT_EQ(o.status, 1) << o.err;
    EXPECT_NE(o.err.find("step 2: the weights are no longer finite numbers (the last update diverged); not saved: " +
                         path("runs/diverged/checkpoints/step_000001") + " stays the latest checkpoint"),
              std::string::npos)
        << o.err;
    EXPECT_EQ(test::slurp(path("runs/diverged/latest")), "step_000001\n");
    EXPECT_EQ(run_lmforge("train " + cfg).status, 0);  // and the run goes on from there
}

// max_steps is the schedule's length: below the step reached it is refused (the final
// evaluation would be labelled with a step the model has passed), and a longer run is told
// how its learning rate moves.
TEST_F(TrainRun, ChangingMaxStepsOnResumeIsRefusedBelowTheStepAndSaidAbove) {
    const std::string cfg = config("longer", 12, 6);
    ASSERT_EQ(run_lmforge("train " + cfg).status, 0);
    const auto shorter = run_lmforge("train " + cfg + " --set train.max_steps=8");
    EXPECT_EQ(shorter.status, 2) << shorter.err;
    EXPECT_NE(shorter.err.find("train.max_steps = 8 is below the step the run has reached (12)"), std::string::npos)
        << shorter.err;
    EXPECT_NE(test::slurp(path("runs/longer/config.toml")).find("max_steps = 12"), std::string::npos);  // kept
    const auto longer = run_lmforge("train " + cfg + " --set train.max_steps=24");
    EXPECT_EQ(longer.status, 0) << longer.err;
    EXPECT_NE(longer.err.find("train.max_steps changes the run's length from 12 to 24 steps: the cosine schedule is "
                              "laid over the new length, so the learning rate at step 12 goes from"),
              std::string::npos)
        << longer.err;
}

// train.time_budget: the first 10 steps measure, then the length is fixed once. A budget spent
// before they end gives the shortest run (one more step); one far beyond gives max_steps;
// either way a resume keeps the length, whatever budget it is given.
TEST_F(TrainRun, ATimeBudgetFixesTheLengthOnceAndAResumeKeepsIt) {
    const std::string budget = " --set optim.warmup_steps=10 --set train.time_budget=";
    const std::string tight = config("tight", 200, 4);
    const auto spent = run_lmforge("train " + tight + budget + "1e-6");
    ASSERT_EQ(spent.status, 0) << spent.err;
    EXPECT_NE(spent.err.find("sequences per step; as many steps as fit in 1e-06 min, at most 200"), std::string::npos)
        << spent.err;
    EXPECT_NE(spent.err.find("time budget of 1e-06 min: 11 steps at"), std::string::npos) << spent.err;
    const auto state = nlohmann::json::parse(test::slurp(path("runs/tight/checkpoints/step_000011/state.json")));
    EXPECT_EQ(state["budget_steps"], 11);
    EXPECT_EQ(state["max_steps"], 11);
    const auto again = run_lmforge("train " + tight + budget + "1000");
    EXPECT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.out.find("is complete at step 11"), std::string::npos) << again.out;

    const auto roomy = run_lmforge("train " + config("roomy", 15, 5) + budget + "1000");
    ASSERT_EQ(roomy.status, 0) << roomy.err;
    EXPECT_NE(roomy.err.find("time budget of 1000 min: 15 steps at"), std::string::npos) << roomy.err;
    EXPECT_NE(roomy.out.find("trained " + path("runs/roomy") + " to step 15"), std::string::npos) << roomy.out;
}

// The end of an lm run: samples of the untrained model beside the trained one's, and the
// validation perplexity against the unigram baseline.
TEST_F(TrainRun, TheEndComparesSamplesBeforeAndAfterAndThePerplexityWithUnigrams) {
    const auto o = run_lmforge("train " + config("compare", 30, 10) + " --set sample.count=2 --set sample.tokens=12");
    ASSERT_EQ(o.status, 0) << o.err;
    for (const char* heading : {"--- sample 1, untrained (step 0) ---", "--- sample 2, untrained (step 0) ---",
                                "--- sample 1, trained (step 30) ---", "--- sample 2, trained (step 30) ---"}) {
        EXPECT_NE(o.out.find(heading), std::string::npos) << heading << "\n" << o.out;
    }
    EXPECT_NE(o.out.find("for a unigram model of the training split"), std::string::npos) << o.out;
    const auto state = nlohmann::json::parse(test::slurp(path("runs/compare/checkpoints/step_000030/state.json")));
    ASSERT_EQ(state["first_samples"].size(), 2u);
    EXPECT_NE(o.out.find(state["first_samples"][0].get<std::string>()), std::string::npos);
    EXPECT_NE(test::slurp(path("runs/compare/train.log")).find("sample (untrained)"), std::string::npos);
}

TEST_F(TrainRun, BadInputGivesOneLine) {
    const std::string base = config("bad", 4, 2);
    expect_one_line_error(run_lmforge("train " + base + " --set train.batch_size=four"),
                          "--set train.batch_size=four: expected an integer");
    expect_one_line_error(run_lmforge("train " + write("typed.toml", "[data]\ndir = 7\n")), "data.dir = 7 must be a string");
    expect_one_line_error(run_lmforge("train " + base + " --set data.dir=" + path("nowhere")),
                          path("nowhere") + ": no such data directory");
    expect_one_line_error(run_lmforge("train " + base + " --set run.dir=/proc/1/lmforge-run"), "is not writable");
    ASSERT_EQ(run_lmforge("train " + base).status, 0);
    const std::string config_toml = test::slurp(path("runs/bad/config.toml"));
    // A resume with another model is refused, also where every tensor would keep its shape
    // (other heads) or the checkpoint holds more than the model reads (fewer layers); the run
    // directory's record of its configuration stays as it was.
    const std::string weights = path("runs/bad/checkpoints/step_000004/model.safetensors");
    expect_one_line_error(run_lmforge("train " + base + " --set model.n_embd=32 --set train.max_steps=6"),
                          weights + ": the checkpoint's model has n_embd = 64, the configuration 32");
    expect_one_line_error(run_lmforge("train " + base + " --set model.n_head=2 --set train.max_steps=6"),
                          "the checkpoint's model has n_head = 4, the configuration 2");
    expect_one_line_error(run_lmforge("train " + base + " --set model.n_layer=1 --set train.max_steps=6"),
                          "the checkpoint's model has n_layer = 2, the configuration 1");
    EXPECT_EQ(test::slurp(path("runs/bad/config.toml")), config_toml);
    // A sample prompt longer than the context would fail at the first sample, and again on
    // every resume: refused before the first step.
    expect_one_line_error(run_lmforge("train " + config("prompt", 4, 2) + " --set sample.every=2 --set sample.prompt=" +
                                      std::string(65, 'a')),
                          "sample.prompt is 65 tokens, longer than the model's context (64 tokens)");
    EXPECT_FALSE(fs::exists(path("runs/prompt/config.toml")));
}

TEST_F(TrainRun, BestHoldsTheLowestValidationLossEvenWhereNoCheckpointFalls) {
    // Evaluations every 10 steps, a checkpoint only at the end: best/ is the evaluation with the
    // lowest loss, whichever step it fell on. The rising learning rate of a long warm-up makes
    // the loss climb after its first fall, so the best step is not the last. In fp32 on every
    // CPU: with precision auto, an AMX CPU's bf16 took another path, whose best was its last.
    const auto run = run_lmforge("train " + config("best", 40, 0) +
                                 " --set optim.lr=0.3 --set optim.warmup_steps=40 --set train.precision=fp32");
    ASSERT_EQ(run.status, 0) << run.err;
    double lowest = 1e9;
    int64_t lowest_step = -1;
    std::ifstream in(path("runs/best/metrics.jsonl"));
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line);
        if (j.contains("val_loss") && j["val_loss"].get<double>() < lowest) {
            lowest = j["val_loss"];
            lowest_step = j["step"];
        }
    }
    ASSERT_GE(lowest_step, 0);
    ASSERT_LT(lowest_step, 40) << "the test needs a run whose best evaluation is not its last";
    const auto best = nlohmann::json::parse(test::slurp(path("runs/best/best/state.json")));
    EXPECT_EQ(best["step"].get<int64_t>(), lowest_step);
    EXPECT_EQ(best["best_step"].get<int64_t>(), lowest_step);
    EXPECT_NEAR(best["best_loss"].get<double>(), lowest, 1e-6 * lowest);
    // The report's perplexity is best/'s, with the end's beside it.
    const std::string at_best = fmt::format("validation perplexity {:.1f} at best/ (step {}), ", std::exp(lowest), lowest_step);
    EXPECT_NE(run.out.find(at_best), std::string::npos) << at_best << "\n" << run.out;
    const auto e = run_lmforge("eval --batches 3 --batch-size 4 --seq-len 64 --checkpoint " + path("runs/best/best") + " --data " + path("data"));
    ASSERT_EQ(e.status, 0) << e.err;
    EXPECT_NEAR(nlohmann::json::parse(e.out)["loss"].get<double>(), lowest, 1e-4 * lowest);
    // The whole split is each window once, whatever the batch: a batch that does not divide
    // the windows, or holds more than all of them, scores the same tokens to the same mean.
    const auto whole = [&](int batch) {
        const auto o = run_lmforge("eval --batch-size " + std::to_string(batch) + " --seq-len 64 --checkpoint " +
                                   path("runs/best/best") + " --data " + path("data"));
        EXPECT_EQ(o.status, 0) << o.err;
        return nlohmann::json::parse(o.out);
    };
    const auto one = whole(1), seven = whole(7);
    const auto all = whole(one["tokens"].get<int>() / 64 + 3);  // three rows more than the windows
    EXPECT_EQ(seven["tokens"], one["tokens"]);
    EXPECT_EQ(all["tokens"], one["tokens"]);
    EXPECT_EQ(all["batches"], 1);
    EXPECT_NEAR(seven["loss"].get<double>(), one["loss"].get<double>(), 1e-5 * one["loss"].get<double>());
    EXPECT_NEAR(all["loss"].get<double>(), one["loss"].get<double>(), 1e-5 * one["loss"].get<double>());
}

TEST_F(TrainRun, AFullDiskDuringACheckpointLeavesThePreviousOneIntact) {
    const std::string cfg = config("full", 10, 5);
    ASSERT_EQ(run_lmforge("train " + cfg).status, 0);
    const std::string before = test::slurp(path("runs/full/checkpoints/step_000010/model.safetensors"));
    // Files may grow to 200 KiB (ulimit -f): the next checkpoint's weights (~690 KB) do not fit,
    // as on a full disk; SIGXFSZ is ignored so that the write fails instead of the process.
    const test::Outcome full = [&] {
        const std::string cmd = std::string("sh -c 'trap \"\" XFSZ; ulimit -f 200; exec ") + LMFORGE_BINARY +
                                " train " + cfg + " --set train.max_steps=15'";
        const auto dir = fs::temp_directory_path();
        const std::string err = (dir / ("lmforge_full_" + std::to_string(::getpid()))).string();
        const int raw = std::system((cmd + " >/dev/null 2>" + err).c_str());
        test::Outcome r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, "", test::slurp(err)};
        fs::remove(err);
        return r;
    }();
    // The run's log lines come first; the failure is one line, the last.
    EXPECT_EQ(full.status, 1) << full.err;
    const std::string last = full.err.substr(full.err.rfind('\n', full.err.size() - 2) + 1);
    EXPECT_EQ(last.rfind("lmforge: error: ", 0), 0u) << full.err;
    EXPECT_NE(last.find("File too large"), std::string::npos) << full.err;
    EXPECT_EQ(full.err.find("terminate"), std::string::npos) << full.err;
    EXPECT_EQ(test::slurp(path("runs/full/latest")), "step_000010\n");
    EXPECT_EQ(test::slurp(path("runs/full/checkpoints/step_000010/model.safetensors")), before);
    EXPECT_FALSE(fs::exists(path("runs/full/checkpoints/step_000015")));
    const auto resumed = run_lmforge("eval --batches 1 --seq-len 64 --checkpoint " + path("runs/full/checkpoints/step_000010") +
                                     " --data " + path("data"));
    EXPECT_EQ(resumed.status, 0) << resumed.err;
}

}  // namespace
}  // namespace lmforge
