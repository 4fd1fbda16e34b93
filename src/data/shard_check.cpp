#include "data/shard_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "data/dataloader.h"
#include "data/prepare_record.h"
#include "data/shard.h"

namespace lmforge {

namespace fs = std::filesystem;

DataCheck check_shards(const std::string& dir, int64_t vocab_size) {
    DataCheck c;
    c.vocab_size = vocab_size;
    if (c.vocab_size == 0) c.vocab_size = data_vocab_size(dir);
    bool any = false;
    // Counts of every id a shard can hold; a larger --vocab-size adds none that occur.
    const int64_t counted = std::clamp<int64_t>(c.vocab_size, 0, kMaxShardVocab);
    std::vector<int64_t> train_counts(static_cast<size_t>(counted), 0);
    double val_nll = 0;
    int64_t val_tokens = 0;
    std::vector<int64_t> val_counts(train_counts.size(), 0);
    for (const std::string split : {"train", "val"}) {
        std::vector<std::string> paths;
        try {
            paths = find_shards(dir, split);
        } catch (const InputError&) {
            continue;  // a split may be absent; no shards at all is reported below
        }
        for (const std::string& p : paths) {
            const Shard s(p);
            if (c.vocab_size > 0) s.check_vocab(c.vocab_size);
            if (c.vocab_size > 0 && split == "train") {
                for (const uint16_t t : s.tokens()) train_counts[t]++;
            } else if (c.vocab_size > 0) {  // train's counts are complete: train comes first
                const double total = static_cast<double>(c.split_tokens["train"] + c.vocab_size);
                for (const uint16_t t : s.tokens()) {
                    val_nll -= std::log((static_cast<double>(train_counts[t]) + 1) / total);
                    val_counts[t]++;
                }
                val_tokens += static_cast<int64_t>(s.tokens().size());
            }
            c.split_tokens[split] += static_cast<int64_t>(s.tokens().size());
            c.split_shards[split]++;
            c.shards++;
            any = true;
        }
    }
    if (!any) find_shards(dir, "train");  // throws the one-line error naming dir
    c.unigram_val_loss = val_tokens > 0 && c.split_tokens["train"] > 0 ? val_nll / static_cast<double>(val_tokens)
                                                                       : std::nan("");
    c.unigram_val_entropy = val_tokens > 0 ? 0 : std::nan("");
    for (const int64_t n : val_counts) {
        if (n > 0) {
            const double p = static_cast<double>(n) / static_cast<double>(val_tokens);
            c.unigram_val_entropy -= p * std::log(p);
        }
    }
    return c;
}

}  // namespace lmforge
