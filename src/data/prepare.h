// lmforge prepare: raw text to token shards. Documents (documents.h) are tokenized on all
// threads, each prefixed by <|endoftext|>, split into train and validation by document, and
// written as llm.c shards (train_000000.bin, ..., val_000000.bin) with the tokenizer's files
// and a prepare.json record. With a label field, the input is labelled examples instead
// (labelled.h), written as {train,val,test}.safetensors and labels.json; with instructions,
// instruction examples (instructions.h), as {train,val,test}.safetensors and
// instructions.json. Either way the output directory appears whole or not at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmforge {

struct PrepareOptions {
    std::vector<std::string> inputs;
    std::string output;
    std::string tokenizer = "gpt2";  // gpt2, char, or a tokenizer path
    std::string data_home;
    double val_fraction = 0.1;
    int64_t shard_tokens = 100'000'000;
    std::string jsonl_field = "text";  // the text's field (JSONL) or column (CSV)
    // Labelled examples for classification: the label's field or column; empty for LM text.
    std::string label_field;
    // Instruction examples for generative fine-tuning (instructions.h) instead.
    bool instructions = false;
    int64_t max_len = 256;       // labelled, instructions: tokens per example
    double test_fraction = 0.1;  // labelled: share of examples for the test split
    uint64_t seed = 1337;  // which documents go to validation
    bool overwrite = false;
    bool progress = true;
};

struct PrepareReport {
    size_t documents = 0, train_documents = 0, val_documents = 0, test_documents = 0, files = 0;
    std::vector<std::string> labels;  // labelled: the class names
    int64_t truncated = 0;            // labelled, instructions: examples cut to max_len
    std::string format;               // instructions: "alpaca" or "prompt_response"
    int64_t train_tokens = 0, val_tokens = 0;
    size_t bytes = 0;
    double seconds = 0, encode_seconds = 0;
    std::string split;  // "documents", or "tokens" when there are too few documents
    std::vector<std::string> shards;
    int64_t vocab_size = 0;
    std::string tokenizer_kind;
};

PrepareReport prepare(const PrepareOptions& opts);

}  // namespace lmforge
