#include "data/dataloader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace lmforge {

namespace fs = std::filesystem;

namespace {

uint64_t mix_seed(uint64_t seed, int64_t a, int64_t b) {
    uint64_t h = seed ^ 0x9E3779B97F4A7C15ull;
    for (const uint64_t v : {static_cast<uint64_t>(a), static_cast<uint64_t>(b)}) {
        h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
        h *= 0xbf58476d1ce4e5b9ull;
    }
    return h;
}

template <class T>
void shuffle(std::vector<T>& v, uint64_t seed) {
    Rng rng(seed);
    for (size_t i = v.size(); i > 1; i--) std::swap(v[i - 1], v[rng.below(i)]);
}

// Whether a file's name puts it in the split: its name is the split's, whole (train.bin), or
// begins with it and an underscore (train_000000.bin), or holds it between underscores (llm.c's
// fineweb_train_000001.bin, tiny_shakespeare_val.bin). A mere prefix is not a split's name:
// "t" is not "train".
bool named_for_split(const std::string& stem, const std::string& split) {
    if (stem == split || stem.rfind(split + "_", 0) == 0) return true;
    for (size_t at = stem.find("_" + split); at != std::string::npos; at = stem.find("_" + split, at + 1)) {
        const size_t end = at + 1 + split.size();
        if (end == stem.size() || stem[end] == '_') return true;
    }
    return false;
}

}  // namespace

std::vector<std::string> find_shards(const std::string& dir, const std::string& split) {
    if (split.empty() || split.find_first_of("/_.") != std::string::npos) {
        throw InputError(fmt::format("\"{}\" is not a split's name", split), "name one: train, val, test");
    }
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        throw InputError(fmt::format("{}: no such data directory", dir), "run lmforge prepare first, or fix data.dir");
    }
    std::vector<std::string> paths;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && named_for_split(e.path().stem().string(), split) && (ext == ".bin" || ext == ".npy")) {
            paths.push_back(e.path().string());
        }
    }
    if (paths.empty()) {
        throw InputError(fmt::format("{}: no {} shards ({}.bin, {}_*.bin, *_{}_*.bin, *_{}.bin or .npy)", dir, split,
                                     split, split, split, split),
                         "run lmforge prepare to make them");
    }
    std::sort(paths.begin(), paths.end());
    return paths;
}

DataLoader::DataLoader(const DataLoaderOptions& opts) : opts_(opts), paths_(find_shards(opts.dir, opts.split)) {
    if (opts.B <= 0 || opts.T <= 0) throw InputError(fmt::format("batch {}x{} must be positive", opts.B, opts.T));
    if (opts.world <= 0 || opts.rank < 0 || opts.rank >= opts.world) {
        throw InputError(fmt::format("rank {} of world {} is out of range", opts.rank, opts.world));
    }
    shards_.resize(paths_.size());
    for (size_t s = 0; s < paths_.size(); s++) {
        // Sizes come from the headers alone; token checks wait until a shard is first read.
        const Shard probe(paths_[s]);
        const auto n = static_cast<int64_t>(probe.tokens().size());
        shard_windows_.push_back(n > opts.T ? (n - 1) / opts.T : 0);
    }
    windows_ = std::accumulate(shard_windows_.begin(), shard_windows_.end(), int64_t{0});
    if (windows_ == 0) {
        throw InputError(fmt::format("{}: the {} shards hold fewer than T + 1 = {} tokens", opts.dir, opts.split,
                                     opts.T + 1),
                         opts.split == "val" ? "use a shorter sequence length, or prepare the data with a larger "
                                               "--val-fraction"
                                             : "use a shorter sequence length or more data");
    }
}

DataLoader::~DataLoader() = default;

int64_t DataLoader::tokens() const { return windows_ * opts_.T; }

const Shard& DataLoader::shard(size_t s) {
    if (!shards_[s]) {
        auto sh = std::make_unique<Shard>(paths_[s]);
        if (opts_.vocab_size > 0) sh->check_vocab(opts_.vocab_size);
        shards_[s] = std::move(sh);
    }
    return *shards_[s];
}

const std::vector<size_t>& DataLoader::shard_order(int64_t epoch) {
    auto it = shard_orders_.find(epoch);
    if (it != shard_orders_.end()) return it->second;
    if (shard_orders_.size() >= 2) {  // keep only the epochs in use
        shard_orders_.erase(shard_orders_.begin());
        prefix_.erase(prefix_.begin());
    }
    std::vector<size_t> order(paths_.size());
    std::iota(order.begin(), order.end(), 0);
    if (opts_.shuffle) shuffle(order, mix_seed(opts_.seed, epoch, -1));
    std::vector<int64_t> prefix(order.size() + 1, 0);
    for (size_t k = 0; k < order.size(); k++) prefix[k + 1] = prefix[k] + shard_windows_[order[k]];
    prefix_[epoch] = std::move(prefix);
    return shard_orders_.emplace(epoch, std::move(order)).first->second;
}

const std::vector<int64_t>& DataLoader::window_order(int64_t epoch, size_t s) {
    const auto key = std::make_pair(epoch, s);
    auto it = window_orders_.find(key);
    if (it != window_orders_.end()) return it->second;
    if (window_orders_.size() >= 4) window_orders_.erase(window_orders_.begin());
    std::vector<int64_t> order(static_cast<size_t>(shard_windows_[s]));
    std::iota(order.begin(), order.end(), 0);
    if (opts_.shuffle) shuffle(order, mix_seed(opts_.seed, epoch, static_cast<int64_t>(s)));
    return window_orders_.emplace(key, std::move(order)).first->second;
}

DataLoader::Window DataLoader::window_at(int64_t epoch, int64_t i) {
    epoch += i / windows_;  // past this epoch's end: the next epoch's windows
    i %= windows_;
    const std::vector<size_t>& order = shard_order(epoch);
    const std::vector<int64_t>& prefix = prefix_.at(epoch);
    const size_t k = static_cast<size_t>(std::upper_bound(prefix.begin(), prefix.end(), i) - prefix.begin()) - 1;
    const size_t s = order[k];
    return {s, window_order(epoch, s)[static_cast<size_t>(i - prefix[k])]};
}

void DataLoader::next_batch(int32_t* inputs, int32_t* targets) {
    const int64_t B = opts_.B, T = opts_.T;
    for (int64_t b = 0; b < B; b++) {
        const Window w = window_at(epoch_, cursor_ + opts_.rank * B + b);
        const uint16_t* tok = shard(w.shard).tokens().data() + w.index * T;
        for (int64_t t = 0; t < T; t++) {
            inputs[b * T + t] = tok[t];
            targets[b * T + t] = tok[t + 1];
        }
    }
    cursor_ += opts_.world * B;
    epoch_ += cursor_ / windows_;
    cursor_ %= windows_;
}

DataLoaderState DataLoader::state() const { return {epoch_, cursor_, windows_, opts_.seed}; }

void DataLoader::restore(const DataLoaderState& s) {
    if (s.windows != windows_ || s.seed != opts_.seed) {
        throw InputError(fmt::format("the saved data position ({} windows per epoch, seed {}) does not fit this data "
                                     "({} windows, seed {})", s.windows, s.seed, windows_, opts_.seed),
                         "resume with the same data directory, sequence length and seed");
    }
    if (s.epoch < 0 || s.cursor < 0 || s.cursor > windows_) {
        throw InputError(fmt::format("the saved data position (epoch {}, window {}) is not one of this data's {} windows",
                                     s.epoch, s.cursor, windows_),
                         "the checkpoint's state is damaged: resume from another checkpoint");
    }
    epoch_ = s.epoch;
    cursor_ = s.cursor;
}

}  // namespace lmforge
