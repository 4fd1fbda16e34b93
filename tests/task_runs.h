// Small runs of every task (lm, classify with GPT-2 and with BERT, mlm, sft, distill with GPT-2
// and with DistilBERT, lm in fp16 with loss scaling, lm, classify and sft with Llama, and sft with
// LoRA adapters over a Llama base) for the tests of the one trainer: their data, made here; a config; and what two runs are compared by — the
// metrics at every step (without the timings) and the files a run ends with.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.h"
#include "instruction_texts.h"
#include "labelled_texts.h"
#include "temp_dir.h"

namespace lmforge::test {

struct TaskCase {
    std::string name;    // for test names
    std::string task;    // train.task
    std::string preset;  // model.preset
    std::string teacher = "";    // distill: the teacher's preset, trained here briefly
    std::string precision = "";  // train.precision, if the case sets it
    bool lora = false;           // LoRA adapters over a base of the preset, trained here briefly
    bool encoder() const { return preset.rfind("bert", 0) == 0 || preset.rfind("distilbert", 0) == 0; }
};

inline void PrintTo(const TaskCase& c, std::ostream* os) { *os << c.name; }  // test names, not bytes

inline const std::vector<TaskCase>& task_cases() {
    static const std::vector<TaskCase> cases = {{"lm", "lm", "gpt2-nano"},
                                                {"classify", "classify", "gpt2-nano"},
                                                {"classify_bert", "classify", "bert-tiny"},
                                                {"mlm", "mlm", "bert-tiny"},
                                                {"sft", "sft", "gpt2-nano"},
                                                {"distill", "distill", "gpt2-nano", "gpt2-nano"},
                                                {"distill_bert", "distill", "distilbert-base", "bert-tiny"},
                                                {"lm_fp16", "lm", "gpt2-nano", "", "fp16"},
                                                {"lm_llama", "lm", "llama-nano"},
                                                {"classify_llama", "classify", "llama-nano"},
                                                {"sft_llama", "sft", "llama-nano"},
                                                {"sft_lora", "sft", "llama-nano", "", "", true}};
    return cases;
}

// Sentences from the labelled texts, for token shards.
inline std::string task_corpus(int n) {
    std::string corpus;
    std::istringstream lines(labelled_texts(n));
    for (std::string line; std::getline(lines, line);) {
        corpus += nlohmann::json::parse(line)["text"].get<std::string>() + ".\n";
    }
    return corpus;
}

// distill: a teacher for DATA, trained briefly (its final/ in DATA-teacher/): any teacher will
// do where the tests compare runs with each other, so one there already (data prepared again)
// is kept. GPT-2's is wider than its student; the encoder's has the student's width, as
// DistilBERT's, for the hidden-state term.
inline void train_teacher(TempDirTest& t, const TaskCase& c, const std::string& data) {
    if (std::filesystem::exists(data + "-teacher/final")) return;
    const std::string width = c.encoder() ? "32" : "48";
    const std::string toml = "[model]\npreset = \"" + c.teacher + "\"\nn_layer = 2\nn_head = 2\nn_embd = " + width + "\n"
                             "block_size = 32\n[data]\ndir = \"" + data + "\"\n[train]\ntask = \"" +
                             (c.encoder() ? "mlm" : "lm") + "\"\nbatch_size = 8\nseq_len = 32\nmax_steps = 15\n"
                             "threads = 1\n[eval]\nevery = 0\nbatches = 1\n[sample]\ncount = 0\n"
                             "[run]\ndir = \"" + data + "-teacher\"\n";
    const auto o = run_lmforge("train " + t.write(std::filesystem::path(data).filename().string() + "-teacher.toml", toml));
    EXPECT_EQ(o.status, 0) << o.err;
}

// LoRA: a base for DATA of the case's shape, trained briefly without adapters (its final/ in
// DATA-base/), kept if there already.
inline void train_lora_base(TempDirTest& t, const TaskCase& c, const std::string& data) {
    if (std::filesystem::exists(data + "-base/final")) return;
    const std::string toml = "[model]\npreset = \"" + c.preset + "\"\nn_layer = 2\nn_head = 2\nn_embd = 32\n"
                             "[data]\ndir = \"" + data + "\"\n[train]\ntask = \"" + c.task + "\"\nbatch_size = 8\n"
                             "max_steps = 30\nepochs = 1\nthreads = 1\n[optim]\nlr = 3e-3\nwarmup_steps = 5\n"
                             "[eval]\nevery = 0\nbatches = 1\n[sample]\ncount = 0\n[run]\ndir = \"" + data + "-base\"\n";
    const auto o = run_lmforge("train " + t.write(std::filesystem::path(data).filename().string() + "-base.toml", toml));
    EXPECT_EQ(o.status, 0) << o.err;
}

// Prepares the task's data in t's directory (character tokenizer) and returns its path; `more`
// examples than usual make other data.
inline std::string prepare_task_data(TempDirTest& t, const TaskCase& c, const std::string& name = "data",
                                     int more = 0) {
    std::string args;
    if (c.task == "classify") {
        args = "--input " + t.write(name + ".jsonl", labelled_texts(400 + more)) + " --label-field label --max-len 48";
    } else if (c.task == "sft") {
        args = "--instructions --input " + t.write(name + ".jsonl", opposites_jsonl(300 + more)) + " --max-len 320";
    } else {
        args = "--input " + t.write(name + ".txt", task_corpus(3000 + more));
    }
    const auto o = run_lmforge("prepare --tokenizer char " + args + " --output " + t.path(name));
    EXPECT_EQ(o.status, 0) << o.err;
    if (!c.teacher.empty()) train_teacher(t, c, t.path(name));
    if (c.lora) train_lora_base(t, c, t.path(name));
    return t.path(name);
}

// n multiple-choice items in HellaSwag's format, written as t's `name`, in the words of the lm
// corpus (task_corpus), which its character tokenizer encodes; the right ending is item i's
// (i mod 4)th.
inline std::string multiple_choice_items(TempDirTest& t, int n, const std::string& name = "items.jsonl") {
    const char* contexts[] = {"today we saw", "then it was very", "we saw some", "the match and", "it was a"};
    const char* endings[] = {"goal", "rain and wind", "bread", "very good soup", "the match", "wind then rain"};
    std::string jsonl;
    for (int i = 0; i < n; i++) {
        std::vector<std::string> four;
        for (int e = 0; e < 4; e++) four.push_back(endings[(i + e) % 6]);
        jsonl += nlohmann::json{{"ctx", contexts[i % 5]}, {"endings", four}, {"label", i % 4}}.dump() + "\n";
    }
    return t.write(name, jsonl);
}

// A run of the task with micro-batches of `batch` (per process): about a hundred steps of a
// tiny model, checkpoints every 7 steps (and at each epoch's end), evaluations every 20; lm
// also scores multiple-choice items every 10 (eval.multiple_choice).
inline std::string task_config(TempDirTest& t, const TaskCase& c, const std::string& data, const std::string& run,
                               int batch, const std::string& precision = "auto") {
    const bool bert = c.encoder();
    const bool epochs = c.task == "classify" || c.task == "sft";
    std::string toml = "[model]\npreset = \"" + c.preset + "\"\nn_layer = 2\nn_head = 2\nn_embd = 32\n";
    if (c.task == "lm" || c.task == "mlm" || c.task == "distill") toml += "block_size = 32\n";
    if (c.lora) {
        toml += "init_from = \"" + data + "-base/final\"\n[lora]\nrank = 4\nalpha = 8\ndropout = 0.1\n"
                "targets = \"q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj\"\n";
    }
    if (c.task == "distill") {
        toml += "[distill]\nteacher = \"" + data + "-teacher/final\"\n";
        if (bert) toml += "cosine_weight = 0.5\n";  // DistilBERT's three terms
    }
    toml += "[data]\ndir = \"" + data + "\"\n[train]\ntask = \"" + c.task + "\"\nbatch_size = " +
            std::to_string(batch) + "\nthreads = 1\nprecision = \"" + (c.precision.empty() ? precision : c.precision) +
            "\"\n";
    // fp16: a loss scale of 2^40 overflows, so the run starts by skipping steps and halving it.
    if (c.precision == "fp16") toml += "loss_scale = 1099511627776\n";
    toml += epochs ? std::string("epochs = ") + (c.task == "sft" ? "3" : "4") + "\n"
                   : "seq_len = 32\nmax_steps = 90\n";
    toml += std::string("[optim]\nlr = 3e-3\nwarmup_steps = 5\n") + (bert ? "weight_decay = 0.01\n" : "") +
            "[eval]\nevery = 20\nbatches = 4\n" +
            (c.task == "lm" ? "multiple_choice = \"" + multiple_choice_items(t, 9) + "\"\nmultiple_choice_every = 10\n"
                            : std::string()) +
            "[checkpoint]\nevery = 7\nkeep_last = 2\n[log]\nevery = 5\n"
            "[sample]\ncount = 1\ntokens = 8\nevery = 30\n[run]\ndir = \"" + t.path(run) + "\"\n";
    return t.write(run + ".toml", toml);
}

// A run's metrics.jsonl, a line each, without the fields that time it.
inline std::vector<std::string> stable_metrics(const std::string& run_dir) {
    std::vector<std::string> lines;
    std::ifstream in(run_dir + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
        auto j = nlohmann::ordered_json::parse(line);
        j.erase("tokens_per_s");
        j.erase("step_ms");
        lines.push_back(j.dump());
    }
    return lines;
}

// The highest training step a run's metrics.jsonl holds so far (-1: none); its writer may be
// midway through a line.
inline int last_logged_step(const std::string& metrics_path) {
    std::ifstream in(metrics_path);
    int step = -1;
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object() && j.contains("loss")) step = std::max(step, j["step"].get<int>());
    }
    return step;
}

// Signals pid once its run has logged step `at` (or later); false if it ended first (and was
// waited for: wait_for(pid) only after true).
inline bool signal_at_step(pid_t pid, const std::string& metrics_path, int at, int sig) {
    int raw = 0;
    while (::waitpid(pid, &raw, WNOHANG) == 0) {
        if (last_logged_step(metrics_path) >= at) {
            ::kill(pid, sig);
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
}

}  // namespace lmforge::test
