// Instruction data for generative fine-tuning: JSONL lines in Alpaca's format
// ({"instruction", "input" (optional), "output"}) or {"prompt", "response"}. Alpaca lines go
// through Alpaca's prompt template; a prompt/response line's prompt is used as it is (it
// carries its own format). Each example is prompt tokens then response tokens then
// <|endoftext|>, cut to max_len (counted), split into train/val/test by seed, and kept with
// its prompt length: the loss is taken on the response only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace lmforge {

struct InstructionOptions {
    std::string path;  // .jsonl
    int64_t max_len = 256;
    double val_fraction = 0.1;
    double test_fraction = 0.1;
    uint64_t seed = 1337;
};

struct InstructionSplit {
    int64_t max_len = 0;
    std::vector<int32_t> tokens;          // (n, max_len), padded with <|endoftext|>
    std::vector<int32_t> lengths;         // (n): prompt and response tokens
    std::vector<int32_t> prompt_lengths;  // (n): the prompt's tokens, the first of them
    std::vector<int64_t> source;          // (n): the line's index in the input file
    int64_t size() const { return static_cast<int64_t>(lengths.size()); }
};

struct InstructionData {
    InstructionSplit train, val, test;
    int32_t pad_id = 0;
    int64_t truncated = 0;  // examples whose response was cut to fit max_len
    std::string format;     // "alpaca" or "prompt_response"
};

// The prompt Alpaca's template makes of an instruction and an optional input.
std::string alpaca_prompt(const std::string& instruction, const std::string& input);

// InputError naming the file and line for a line of neither format, an empty response, or a
// prompt that leaves no room in max_len for a response token.
InstructionData load_instructions(const InstructionOptions& opts, const Tokenizer& tokenizer);

// {train,val,test}.safetensors (tokens, lengths, prompt_lengths, source) and instructions.json.
void save_instructions(const InstructionData& data, const std::string& dir);
InstructionData load_instructions_dir(const std::string& dir);

}  // namespace lmforge
