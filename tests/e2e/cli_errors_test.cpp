// Bad input to the lmforge program: one line on stderr naming the field and the value, exit
// status 2, no crash and no stack trace.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl_version.h>

#include <string>

#include "cli_util.h"
#include "temp_dir.h"
#include "tokenizer/byte_level.h"

namespace {

using lmforge::test::count_lines;
using lmforge::test::Outcome;
using lmforge::test::run_lmforge;

struct BadInput {
    const char* name;
    const char* args;
    const char* expected;  // a part of the one error line
};

class CliErrors : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliErrors, OneLineNamingFieldAndValueExitStatus2) {
    const Outcome o = run_lmforge(GetParam().args);
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_EQ(count_lines(o.err), 1) << o.err;
    EXPECT_NE(o.err.find("lmforge: error: "), std::string::npos) << o.err;
    EXPECT_NE(o.err.find(GetParam().expected), std::string::npos) << o.err;
    EXPECT_EQ(o.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    Bench, CliErrors,
    ::testing::Values(
        BadInput{"NotDivisible", "bench --layers 1 --heads 3 --embd 100", "n_embd = 100 is not divisible by n_head = 3"},
        BadInput{"UnknownPreset", "bench --model gpt5", "unknown model preset 'gpt5'"},
        BadInput{"ZeroThreads", "bench --threads 0", "--threads"},
        // libgomp crashed (SIGSEGV) starting this many threads.
        BadInput{"TooManyThreads", "bench --threads 100000 --layers 1 --heads 1 --embd 32 --vocab 64 --seq 8 --batch 1 "
                 "--steps 1 --warmup 0 --peak-gflops 1", "--threads: 100000 threads"},
        BadInput{"ZeroLayers", "bench --layers 0", "--layers"},
        BadInput{"NegativeHeads", "bench --heads -4", "--heads"},
        BadInput{"ZeroBatch", "bench --batch 0", "--batch"},
        BadInput{"NegativeSeq", "bench --seq -1", "--seq"},
        BadInput{"WordForNumber", "bench --layers two", "--layers"},
        BadInput{"UnknownGemm", "bench --gemm blas", "unknown GEMM backend 'blas'"},
        BadInput{"UnknownFlag", "bench --no-such-flag", "--no-such-flag"},
        BadInput{"UnknownCommand", "frobnicate", "frobnicate"}),
    [](const auto& info) { return std::string(info.param.name); });

// Flags that would be ignored, or values no command can use, checked before any file is read.
INSTANTIATE_TEST_SUITE_P(
    Commands, CliErrors,
    ::testing::Values(
        BadInput{"DecodeWithAllowSpecial", "tokenize --decode --allow-special", "excludes"},
        BadInput{"DecodeWithJsonlField", "tokenize --decode --jsonl-field text", "excludes"},
        BadInput{"EvalModesMixed", "eval --checkpoint c --multiple-choice m.jsonl --batch-size 3",
                 "--multiple-choice excludes --batch-size"},
        BadInput{"EvalTokenizerWithData", "eval --checkpoint c --data d --tokenizer gpt2", "excludes"},
        BadInput{"NanTemperature", "sample --checkpoint c --temperature nan", "--temperature nan must be a finite number"},
        BadInput{"ZeroVocabulary", "data check d --vocab-size 0", "--vocab-size"},
        BadInput{"LogitsIntoNoDirectory", "logits --checkpoint c --ids 1 --output /no/such/dir/x.safetensors",
                 "--output /no/such/dir/x.safetensors: no directory /no/such/dir"}),
    [](const auto& info) { return std::string(info.param.name); });

// A tokenizer file's id outside the vocabulary is refused by name: -5 once corrupted the heap
// ("double free or corruption", or SIGSEGV) when the tokenizer was built.
class CliTokenizerFiles : public lmforge::test::TempDirTest {};

TEST_F(CliTokenizerFiles, NegativeSpecialTokenIdIsOneLineExitStatus2) {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; b++) vocab[lmforge::bytes_to_unicode(std::string(1, static_cast<char>(b)))] = b;
    vocab["<|foo|>"] = -5;
    write("tok/encoder.json", vocab.dump());
    write("tok/vocab.bpe", "#version: 0.2\n");
    const Outcome o = run_lmforge("tokenize --tokenizer " + path("tok") + " < " + write("in.txt", "hi\n"));
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_EQ(count_lines(o.err), 1) << o.err;
    EXPECT_NE(o.err.find("lmforge: error: " + path("tok/encoder.json") + ": token '<|foo|>' has no valid id (-5)"),
              std::string::npos)
        << o.err;
    EXPECT_EQ(o.out, "");
}

// train.threads past the limit is refused before anything is written: libgomp crashed
// (SIGSEGV) starting 100000 threads.
class CliTrainConfig : public lmforge::test::TempDirTest {};

TEST_F(CliTrainConfig, TooManyThreadsIsOneLineExitStatus2) {
    const std::string text = write("corpus.txt", std::string(4000, 'a') + "\n");
    ASSERT_EQ(run_lmforge("prepare --tokenizer char --input " + text + " --output " + path("data")).status, 0);
    const std::string config = write("t.toml", "[model]\npreset = \"gpt2-nano\"\nn_layer = 1\nn_head = 1\nn_embd = 32\n"
                                               "[data]\ndir = \"" + path("data") + "\"\n[train]\nbatch_size = 1\n"
                                               "seq_len = 8\nmax_steps = 1\n[run]\ndir = \"" + path("run") + "\"\n");
    const Outcome o = run_lmforge("train " + config + " --set train.threads=100000");
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_EQ(count_lines(o.err), 1) << o.err;
    EXPECT_NE(o.err.find("lmforge: error: train.threads: 100000 threads"), std::string::npos) << o.err;
    EXPECT_FALSE(std::filesystem::exists(path("run")));
}

// LMFORGE_ISA picks the kernels' level (a lower one than the CPU's best), and bench says which
// ran; a name that is no level is one line and exit 2.
TEST(Cli, LmforgeIsaChoosesTheKernelsLevel) {
    const std::string bench = "bench --model gpt2-nano --batch 2 --seq 16 --steps 1 --warmup 0 --json";
    const Outcome best = run_lmforge(bench);
    ASSERT_EQ(best.status, 0) << best.err;
    // A native build (-DLMFORGE_NATIVE=ON) has one level and refuses others.
    const bool native = best.out.find("\"kernels\":\"native\"") != std::string::npos;
    const Outcome baseline = run_lmforge(bench, "LMFORGE_ISA=baseline ");
    EXPECT_EQ(baseline.status, native ? 2 : 0) << baseline.err;
    if (!native) {
        EXPECT_NE(baseline.out.find("\"kernels\":\"baseline\""), std::string::npos) << baseline.out;
    }
    const Outcome bogus = run_lmforge(bench, "LMFORGE_ISA=sse9 ");
    EXPECT_EQ(bogus.status, 2);
    EXPECT_EQ(count_lines(bogus.err), 1) << bogus.err;
    EXPECT_NE(bogus.err.find("LMFORGE_ISA = sse9: not a level of this build"), std::string::npos) << bogus.err;
}

TEST(Cli, HelpAndVersionSucceed) {
    EXPECT_EQ(run_lmforge("--help").status, 0);
    const Outcome v = run_lmforge("--version");
    EXPECT_EQ(v.status, 0);
    // CMakeLists.txt's project(VERSION), and the commit the build came from.
    const std::string cmake = lmforge::test::slurp(std::string(LMFORGE_SOURCE_DIR) + "/CMakeLists.txt");
    const size_t at = cmake.find("project(lmforge VERSION ") + 24;
    const std::string version = cmake.substr(at, cmake.find(' ', at) - at);
    EXPECT_EQ(v.out.rfind("lmforge " + version + " (commit ", 0), 0u) << v.out;
    EXPECT_EQ(v.out.find("(commit unknown)"), std::string::npos) << v.out;  // built from this git checkout
    // The oneDNN it runs on is the one it was built against (2.x or 3.x).
    const std::string onednn = ", oneDNN " + std::to_string(DNNL_VERSION_MAJOR) + "." + std::to_string(DNNL_VERSION_MINOR) + ".";
    EXPECT_NE(v.out.find(onednn), std::string::npos) << v.out;
}

}  // namespace
