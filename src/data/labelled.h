// Labelled text for classification: JSONL ({"text": ..., "label": ...}) or CSV with a header
// row, tokenized, cut to the first max_len tokens or padded after the text (with
// <|endoftext|>, GPT-2's convention), and split into train, validation and test by seed.
// Labels are strings, integers or booleans, trimmed; the label map (name -> class index:
// integer labels by value first, then the others by text) is kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace lmforge {

struct LabelledOptions {
    std::string path;                 // .jsonl or .csv
    std::string text_field = "text";  // JSON field or CSV column
    std::string label_field = "label";
    int64_t max_len = 256;
    double val_fraction = 0.1;
    double test_fraction = 0.1;
    uint64_t seed = 1337;
};

struct LabelledSplit {
    int64_t max_len = 0;
    std::vector<int32_t> tokens;   // (n, max_len), padded
    std::vector<int32_t> lengths;  // (n): tokens before the padding (>= 1)
    std::vector<int32_t> labels;   // (n): class indices
    std::vector<int64_t> source;   // (n): the example's index in the input file
    int64_t size() const { return static_cast<int64_t>(labels.size()); }
};

struct LabelledData {
    LabelledSplit train, val, test;
    std::vector<std::string> label_names;  // class index -> name
    int32_t pad_id = 0;
    int64_t truncated = 0;  // examples cut to max_len
};

// InputError naming the file and line for a missing field, a bad JSON line, an empty text.
LabelledData load_labelled(const LabelledOptions& opts, const Tokenizer& tokenizer);

// {train,val,test}.safetensors (tokens, lengths, labels, source) and labels.json in dir.
void save_labelled(const LabelledData& data, const std::string& dir);
LabelledData load_labelled_dir(const std::string& dir);

}  // namespace lmforge
