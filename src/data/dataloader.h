// The training DataLoader: batches of (B, T) inputs and next-token targets from
// memory-mapped shards (shard.h), each rank of a multi-process run reading its own part.
//
// A shard of n tokens holds (n − 1) / T windows of T + 1 tokens (window i starts at i·T).
// An epoch visits every window once: shards in an order shuffled by (seed, epoch), each
// shard's windows in an order shuffled by (seed, epoch, shard) — or both in file order when
// shuffling is off. A global batch is the next world·B windows of that sequence, crossing
// into the next epoch when this one runs out; rank r takes windows [r·B, (r+1)·B) of it.
//
// The position is just (epoch, cursor): the orders are recomputed from the seed, so a
// restored state resumes in time independent of how far training went, never by replaying.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/shard.h"

namespace lmforge {

struct DataLoaderOptions {
    std::string dir;        // holds the shards
    std::string split = "train";  // shards named <split>_*.bin, <split>*.bin or <split>*.npy
    int64_t B = 1, T = 1;
    int rank = 0, world = 1;
    bool shuffle = true;
    uint64_t seed = 1337;
    int64_t vocab_size = 0;  // > 0: tokens are checked against it as shards are first read
};

struct DataLoaderState {
    int64_t epoch = 0;
    int64_t cursor = 0;           // windows of this epoch already handed out, all ranks together
    int64_t windows = 0;          // per epoch: a restored state must fit the same data
    uint64_t seed = 0;
};

class DataLoader {
public:
    // InputError if the directory holds no shards for the split, or too few tokens for one window.
    explicit DataLoader(const DataLoaderOptions& opts);
    ~DataLoader();

    // inputs, targets: (B, T), targets[t] = the token after inputs[t].
    void next_batch(int32_t* inputs, int32_t* targets);

    DataLoaderState state() const;
    // InputError if the state belongs to other data (window count or seed differ).
    void restore(const DataLoaderState& s);
    void reset() { restore({0, 0, windows_, opts_.seed}); }  // back to the start of epoch 0

    int64_t windows_per_epoch() const { return windows_; }  // all ranks together
    const DataLoaderOptions& options() const { return opts_; }
    int64_t tokens() const;
    const std::vector<std::string>& shard_paths() const { return paths_; }

private:
    struct Window {
        size_t shard;
        int64_t index;
    };
    Window window_at(int64_t epoch, int64_t i);
    const std::vector<size_t>& shard_order(int64_t epoch);
    const std::vector<int64_t>& window_order(int64_t epoch, size_t shard);
    const Shard& shard(size_t s);

    DataLoaderOptions opts_;
    std::vector<std::string> paths_;
    std::vector<std::unique_ptr<Shard>> shards_;  // opened (and checked) on first use
    std::vector<int64_t> shard_windows_;
    int64_t windows_ = 0;
    int64_t epoch_ = 0, cursor_ = 0;
    // Caches of the orders in use: at most two epochs' shard orders (a batch may straddle
    // an epoch's end) and a few shards' window orders.
    std::map<int64_t, std::vector<size_t>> shard_orders_;
    std::map<std::pair<int64_t, size_t>, std::vector<int64_t>> window_orders_;
    std::map<int64_t, std::vector<int64_t>> prefix_;  // per epoch: windows before each position
};

// The shards of a split in dir, sorted (InputError naming dir if none): .bin and .npy files
// whose name begins with the split's or holds it between underscores (fineweb_train_000001.bin).
std::vector<std::string> find_shards(const std::string& dir, const std::string& split);

}  // namespace lmforge
