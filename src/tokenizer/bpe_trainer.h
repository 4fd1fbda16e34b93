// Training a byte-level BPE: text is pre-tokenized as GPT-2 does (pretokenizer.h) into words
// counted by frequency; starting from the 256 bytes, the most frequent adjacent pair (ties:
// the lowest ids) is merged into a new token until the vocabulary is full or no pair occurs
// twice. The result is a BpeTokenizer with <|endoftext|> as its last id, saved in GPT-2's
// file format (encoder.json + vocab.bpe) so every loader reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "tokenizer/bpe.h"

namespace lmforge {

struct BpeTrainReport {
    int64_t words = 0;         // distinct pre-tokenized words
    int64_t merges = 0;
    double seconds = 0;
};

// vocab_size counts the 256 bytes, the merges and <|endoftext|>: 257 < vocab_size <= 65536.
std::unique_ptr<BpeTokenizer> train_bpe(const std::vector<std::string_view>& texts, int64_t vocab_size,
                                        BpeTrainReport* report = nullptr);

}  // namespace lmforge
