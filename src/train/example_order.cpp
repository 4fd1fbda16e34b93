#include "train/example_order.h"

#include <fmt/format.h>

#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/rng.h"

namespace lmforge {

int64_t ExampleOrder::at(int64_t pass, int64_t i) {
    if (pass != pass_) {
        order_.resize(static_cast<size_t>(n_));
        std::iota(order_.begin(), order_.end(), 0);
        // Passes count from 1 in the seed, as the first trainers of these tasks drew them.
        Rng rng(seed_ * 1000003u + static_cast<uint64_t>(pass + 1));
        for (int64_t k = n_; k > 1; k--) std::swap(order_[k - 1], order_[rng.below(static_cast<uint64_t>(k))]);
        pass_ = pass;
    }
    return order_[static_cast<size_t>(i)];
}

void EpochBatches::start(const BatchPlan& plan) {
    plan_ = plan;
    epoch_ = 0;
    position_ = 0;
}

std::vector<int64_t> EpochBatches::next() {
    const int64_t n = order_.size(), global = plan_.global();
    const int64_t epoch_positions = (n + global - 1) / global * global;  // whole steps
    if (position_ == epoch_positions) {
        epoch_++;
        position_ = 0;
    }
    std::vector<int64_t> idx(static_cast<size_t>(plan_.B));
    for (int64_t b = 0; b < plan_.B; b++) idx[b] = order_.at(epoch_, (position_ + plan_.rank * plan_.B + b) % n);
    position_ += plan_.B * plan_.world;
    return idx;
}

void EpochBatches::restore(const nlohmann::json& state, const std::string& where) {
    const int64_t epoch = state.at("epoch").get<int64_t>(), position = state.at("position").get<int64_t>();
    const int64_t n = order_.size(), global = plan_.global();
    const int64_t epoch_positions = (n + global - 1) / global * global;
    if (epoch < 0 || position < 0 || position > epoch_positions || position % global != 0) {
        throw InputError(fmt::format("{}: data position epoch {}, example {} does not fit {} examples in steps of {}",
                                     where, epoch, position, n, global),
                         "the checkpoint is of other data or another global batch");
    }
    epoch_ = epoch;
    position_ = position;
}

std::vector<std::string> split_files(const std::string& dir, const char* meta) {
    std::vector<std::string> files;
    for (const char* f : {"train.safetensors", "val.safetensors", "test.safetensors", meta}) {
        files.push_back(dir + "/" + f);
    }
    return files;
}

void check_splits(const std::string& dir, int64_t train, int64_t val, int64_t test) {
    if (train == 0) throw InputError(fmt::format("{}: the training split is empty", dir));
    if (val == 0) {
        throw InputError(fmt::format("{}: the validation split is empty: the best checkpoint is chosen on it", dir),
                         "prepare the data with --val-fraction above 0");
    }
    if (test == 0) {
        throw InputError(fmt::format("{}: the test split is empty: the run ends in a test report on it", dir),
                         "prepare the data with --test-fraction above 0");
    }
}

}  // namespace lmforge
