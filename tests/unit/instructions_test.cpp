// Instruction data: Alpaca lines through Alpaca's template, prompt/response lines as they are;
// the response ends with <|endoftext|>; prompt lengths recorded (the loss is the response's);
// cut responses counted; bad lines named by line; saved and loaded back unchanged.
#include "data/instructions.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "temp_dir.h"
#include "test_util.h"
#include "tokenizer/char_tokenizer.h"

namespace lmforge::test {
namespace {

class Instructions : public TempDirTest {
protected:
    // Every character the tests' texts use, and Alpaca's template's.
    CharTokenizer tokenizer_ = CharTokenizer::from_texts({alpaca_prompt("abcdefghijklmnopqrstuvwxyz", "x"), "?!"});
    InstructionData load(const std::string& jsonl, int64_t max_len) {
        return load_instructions({write("data.jsonl", jsonl), max_len, 0.0, 0.0, 1}, tokenizer_);
    }
};

TEST_F(Instructions, AlpacaLinesGoThroughTheTemplate) {
    const InstructionData d = load("{\"instruction\": \"say hi\", \"input\": \"now\", \"output\": \"hi\"}\n"
                                   "{\"instruction\": \"say no\", \"output\": \"no\"}\n", 400);
    EXPECT_EQ(d.format, "alpaca");
    ASSERT_EQ(d.train.size(), 2);
    const int32_t eot = *tokenizer_.eot_id();
    for (int64_t k = 0; k < 2; k++) {
        const int64_t i = d.train.source[k];  // the line each example came from
        const std::string prompt = i == 0 ? alpaca_prompt("say hi", "now") : alpaca_prompt("say no", "");
        const std::string response = i == 0 ? "hi" : "no";
        const int32_t* tokens = d.train.tokens.data() + k * d.train.max_len;
        ASSERT_EQ(d.train.prompt_lengths[k], static_cast<int32_t>(prompt.size()));
        ASSERT_EQ(d.train.lengths[k], static_cast<int32_t>(prompt.size() + response.size() + 1));
        EXPECT_EQ(tokenizer_.decode({tokens, prompt.size()}), prompt);
        EXPECT_EQ(tokenizer_.decode({tokens + prompt.size(), response.size()}), response);
        EXPECT_EQ(tokens[d.train.lengths[k] - 1], eot);  // the model learns to stop
        EXPECT_EQ(tokens[d.train.max_len - 1], d.pad_id);  // padded after
    }
    EXPECT_NE(alpaca_prompt("a", "b").find("### Input:\nb"), std::string::npos);
    EXPECT_EQ(alpaca_prompt("a", "").find("### Input:"), std::string::npos);
}

TEST_F(Instructions, PromptResponseLinesAreKeptAsTheyAreAndCutResponsesCounted) {
    const InstructionData d = load("{\"prompt\": \"abc?\", \"response\": \"defgh\"}\n", 7);
    EXPECT_EQ(d.format, "prompt_response");
    EXPECT_EQ(d.train.prompt_lengths[0], 4);
    EXPECT_EQ(d.train.lengths[0], 7);  // "abc?" + "def": the rest of the response did not fit
    EXPECT_EQ(d.truncated, 1);
    save_instructions(d, path("saved"));
    const InstructionData back = load_instructions_dir(path("saved"));
    EXPECT_EQ(back.train.tokens, d.train.tokens);
    EXPECT_EQ(back.train.prompt_lengths, d.train.prompt_lengths);
    EXPECT_EQ(back.format, d.format);
}

// An instructions.json that prepare did not write so (damaged, edited) is refused naming it;
// its JSON errors once escaped as internal errors, and a pad_id of 1e300 was converted with
// undefined behaviour. (Found by fuzz/prepared_data_fuzz.cpp.)
TEST_F(Instructions, DamagedInstructionsJsonIsRefused) {
    for (const auto& [meta, why] : {std::pair{"{\"format\"", "not valid JSON"},
                                    {R"({"format": 1, "pad_id": 0})", "type must be string"},
                                    {R"({"format": "alpaca"})", "no field \"pad_id\""},
                                    {R"({"format": "alpaca", "pad_id": 1e300})", "\"pad_id\" is 1e+300"}}) {
        write("bad/instructions.json", meta);
        const std::string e = input_error_of([&] { load_instructions_dir(path("bad")); });
        EXPECT_NE(e.find(path("bad/instructions.json") + ": "), std::string::npos) << e;
        EXPECT_NE(e.find(why), std::string::npos) << e;
    }
}

TEST_F(Instructions, BadLinesAreNamed) {
    const auto expect_error = [&](const std::string& jsonl, int64_t max_len, const std::string& needle) {
        try {
            load(jsonl, max_len);
            ADD_FAILURE() << "no error for " << jsonl;
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect_error("{\"prompt\": \"a\", \"response\": \"b\"}\n{\"text\": \"c\"}\n", 50, "data.jsonl:2: needs");
    expect_error("{\"prompt\": \"a\", \"response\": \"\"}\n", 50, "data.jsonl:1: empty response");
    expect_error("{\"prompt\": \"\", \"response\": \"b\"}\n", 50, "data.jsonl:1: empty prompt");
    expect_error("{\"prompt\": \"abcdef\", \"response\": \"b\"}\n", 6, "data.jsonl:1: the prompt's 6 tokens leave no room");
    expect_error("{\"prompt\": \"a\", \"response\": \"b\"}\n{\"instruction\": \"a\", \"output\": \"b\"}\n", 50,
                 "data.jsonl:2: alpaca fields in a file of prompt_response lines");
}

}  // namespace
}  // namespace lmforge::test
