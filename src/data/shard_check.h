// Checking a directory of shards the way training will read them: every shard's header and
// size, and every token against the vocabulary (from prepare.json unless given).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace lmforge {

struct DataCheck {
    int64_t shards = 0;
    int64_t vocab_size = 0;  // 0: unknown, tokens not checked
    std::map<std::string, int64_t> split_tokens, split_shards;  // by split ("train", "val")
    // The loss a model that knows only token frequencies gets: validation cross-entropy (nats
    // per token) under the training split's unigram counts, add-one smoothed over the
    // vocabulary. The bar a trained model must clear. NaN without both splits or a vocabulary.
    double unigram_val_loss = 0;
    // Stricter: the validation split's own unigram entropy (its frequencies known in advance),
    // which no model that ignores context can beat.
    double unigram_val_entropy = 0;
};

// InputError naming the first shard that is damaged or holds a token outside the vocabulary.
DataCheck check_shards(const std::string& dir, int64_t vocab_size = 0);

}  // namespace lmforge
