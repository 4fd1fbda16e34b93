// The metrics on their way to an MLflow tracking server, in the order they were measured. A
// value leaves the queue only once the server has acknowledged it, and keeps the timestamp it
// was queued with: a batch sent again because its answer was lost is the same batch, which
// MLflow's SQL stores keep once (a value's identity is its key, step, timestamp and value).
// A run resumed into an MLflow run that holds values already (from the run before a crash,
// steps past the checkpoint among them) first learns, key by key, the steps the server holds;
// values at those steps are dropped unsent, so each (key, step) reaches MLflow once and keeps
// its first value.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/mlflow_client.h"
#include "train/metrics.h"

namespace lmforge {

class MlflowOutbox {
public:
    // From now on the MLflow run may hold values already (it is a resumed run's): no value is
    // sent before the steps of its key are known().
    void check_server() { check_server_ = true; }

    // A metrics.jsonl line: each value becomes "<group>/<key>" (TensorBoard's names too).
    void add(int64_t step, const std::string& group, const MetricValues& values, int64_t timestamp_ms);
    size_t size() const { return queue_.size(); }
    bool empty() const { return queue_.empty(); }

    // The keys among the first n queued whose steps on the server are still to be known.
    std::vector<std::string> unknown_keys(size_t n) const;
    void known(const std::string& key, const std::vector<int64_t>& steps_on_server);

    struct Batch {
        std::vector<MlflowMetric> metrics;  // to send
        size_t covers = 0;                  // queued values it settles, those the server holds too
    };
    // The next batch from the first n queued (all of whose keys are known where that matters).
    Batch next(size_t n) const;
    // The batch was acknowledged: its values leave the queue.
    void settled(const Batch& batch);

private:
    bool check_server_ = false;
    std::deque<MlflowMetric> queue_;
    std::map<std::string, std::set<int64_t>> on_server_;  // key -> steps (check_server only)
};

}  // namespace lmforge
