// The order a task visits its examples in: a permutation of [0, n) for each pass over them,
// drawn from (seed, pass) alone. Any position of any pass is found again from those numbers,
// so a resumed run, on any number of processes, takes the very examples the interrupted one
// would have taken, without replaying anything.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/task.h"

namespace lmforge {

class ExampleOrder {
public:
    ExampleOrder(int64_t n, uint64_t seed) : n_(n), seed_(seed) {}
    // The example at position i of pass `pass` (the permutation of the latest pass is kept).
    int64_t at(int64_t pass, int64_t i);
    int64_t size() const { return n_; }

private:
    int64_t n_;
    uint64_t seed_;
    int64_t pass_ = -1;
    std::vector<int64_t> order_;
};

// The micro-batches of an epoch-based task (classify, sft): each epoch is a pass over the n
// training examples in steps of plan.global() of them, the last step of an epoch wrapping
// round to the epoch's start; a micro-batch takes B · world of a step's examples, this process
// the B at its rank. The position is (epoch, examples of the epoch handed out).
class EpochBatches {
public:
    EpochBatches(int64_t n, uint64_t seed) : order_(n, seed) {}
    void start(const BatchPlan& plan);
    // This process's B example indices of the next micro-batch.
    std::vector<int64_t> next();
    nlohmann::json state() const { return {{"epoch", epoch_}, {"position", position_}}; }
    // InputError (naming `where`) for a position that is not one of this data's.
    void restore(const nlohmann::json& state, const std::string& where);

private:
    ExampleOrder order_;
    BatchPlan plan_;
    int64_t epoch_ = 0, position_ = 0;
};

// The data files of an epoch-based task in dir: its three splits' shards and `meta`, the file
// that says what the examples are (labels.json, instructions.json).
std::vector<std::string> split_files(const std::string& dir, const char* meta);

// InputError naming dir where a split is empty: training needs examples, the best checkpoint is
// chosen on the validation split, and the run ends in a report on the test split.
void check_splits(const std::string& dir, int64_t train, int64_t val, int64_t test);

// This process's share of a split of n examples for evaluation (examples rank, rank + world, ...)
// in batches of at most B: visit(indices) for each.
template <class Visit>
void for_each_batch_of_share(int64_t n, int64_t rank, int64_t world, int64_t B, Visit&& visit) {
    std::vector<int64_t> mine;
    for (int64_t i = rank; i < n; i += world) mine.push_back(i);
    for (size_t begin = 0; begin < mine.size(); begin += static_cast<size_t>(B)) {
        const auto end = mine.begin() + static_cast<int64_t>(std::min(mine.size(), begin + static_cast<size_t>(B)));
        visit(std::vector<int64_t>(mine.begin() + static_cast<int64_t>(begin), end));
    }
}

}  // namespace lmforge
