#include "train/mlflow_outbox.h"

#include <algorithm>

namespace lmforge {

void MlflowOutbox::add(int64_t step, const std::string& group, const MetricValues& values, int64_t timestamp_ms) {
    for (const auto& [key, value] : values) queue_.push_back({group + "/" + key, value, timestamp_ms, step});
}

std::vector<std::string> MlflowOutbox::unknown_keys(size_t n) const {
    std::vector<std::string> keys;
    if (!check_server_) return keys;
    for (size_t i = 0; i < std::min(n, queue_.size()); i++) {
        const std::string& key = queue_[i].key;
        if (on_server_.count(key) == 0 && std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
    return keys;
}

void MlflowOutbox::known(const std::string& key, const std::vector<int64_t>& steps_on_server) {
    on_server_[key].insert(steps_on_server.begin(), steps_on_server.end());
}

MlflowOutbox::Batch MlflowOutbox::next(size_t n) const {
    Batch batch;
    batch.covers = std::min(n, queue_.size());
    for (size_t i = 0; i < batch.covers; i++) {
        const MlflowMetric& m = queue_[i];
        const auto held = on_server_.find(m.key);
        if (held == on_server_.end() || held->second.count(m.step) == 0) batch.metrics.push_back(m);
    }
    return batch;
}

void MlflowOutbox::settled(const Batch& batch) {
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(batch.covers));
}

}  // namespace lmforge
