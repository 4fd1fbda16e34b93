// Instruction fine-tuning end to end through the CLI: Alpaca-format data whose prompts hold 40
// random letters (no model can predict them) and whose responses follow from one word of the
// input. The model must learn the responses (greedy decoding reproduces them), and its loss,
// taken on response tokens only, must be far below what the random prompt letters alone
// would add to a loss over every token.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "instruction_texts.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

using test::run_lmforge;

class Sft : public test::TempDirTest {};

TEST_F(Sft, LearnsTheResponsesWithTheLossOnThemAlone) {
    const std::string jsonl = write("opposites.jsonl", test::opposites_jsonl(1200));
    auto o = run_lmforge("prepare --tokenizer char --instructions --input " + jsonl + " --max-len 320 --output " +
                         path("data"));
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("1200 instruction examples (alpaca)"), std::string::npos) << o.out;
    const std::string config = write(
        "sft.toml", "[model]\npreset = \"gpt2-nano\"\nn_layer = 2\nn_head = 2\nn_embd = 64\n[data]\ndir = \"" +
                        path("data") + "\"\n[train]\ntask = \"sft\"\nbatch_size = 16\nepochs = 6\nthreads = 2\n"
                        "[optim]\nlr = 3e-3\nwarmup_steps = 20\n[run]\ndir = \"" + path("run") + "\"\n");
    o = run_lmforge("train " + config);
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.err.find("loss on response tokens only"), std::string::npos) << o.err;
    EXPECT_NE(o.out.find("greedy completion"), std::string::npos) << o.out;
    // The last line: "test (best/ from step S, epoch E): loss L (perplexity P) on response
    // tokens; exact match M of N responses".
    const size_t at = o.out.find("): loss ", o.out.rfind("test (best/ from step "));
    ASSERT_NE(at, std::string::npos) << o.out;
    const double loss = std::stod(o.out.substr(at + 8));
    const size_t em = o.out.rfind("exact match ");
    const double exact = std::stod(o.out.substr(em + 12));
    // Each response is 2-5 characters and <|endoftext|>; the 40 random letters alone would add
    // 40 ln 26 = 130 nats to each example's ~290 tokens (0.45 a token) in a loss over all.
    EXPECT_LT(loss, 0.2) << o.out;
    EXPECT_GT(exact, 0.9) << o.out;
    EXPECT_TRUE(std::filesystem::exists(path("run/best/model.safetensors")));
}

TEST_F(Sft, BadInputFailsWithOneLine) {
    const auto expect_one_line = [&](const std::string& command, const std::string& needle) {
        const auto o = run_lmforge(command);
        EXPECT_EQ(o.status, 2) << o.err;
        EXPECT_NE(o.err.find(needle), std::string::npos) << o.err;
        EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    };
    const std::string bad = write("bad.jsonl", "{\"prompt\": \"a\", \"response\": \"b\"}\n{\"text\": \"c\"}\n");
    expect_one_line("prepare --tokenizer char --instructions --input " + bad + " --output " + path("x"),
                    "bad.jsonl:2: needs \"instruction\" and \"output\" (Alpaca) or \"prompt\" and \"response\"");
    // Labelled data is not instruction data.
    const std::string labelled = write("l.jsonl", "{\"text\": \"ab\", \"label\": \"x\"}\n{\"text\": \"ba\", \"label\": \"y\"}\n");
    ASSERT_EQ(run_lmforge("prepare --tokenizer char --input " + labelled + " --label-field label --val-fraction 0 "
                          "--test-fraction 0 --output " + path("labelled")).status, 0);
    const std::string config = write("c.toml", "[model]\npreset = \"gpt2-nano\"\n[data]\ndir = \"" +
                                                       path("labelled") + "\"\n[train]\ntask = \"sft\"\n");
    expect_one_line("train " + config, "no instructions.json: not instruction data");
}

}  // namespace
}  // namespace lmforge
