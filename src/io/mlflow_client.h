// An MLflow tracking server through its REST API (api/2.0/mlflow/...: experiments, runs,
// metrics) and its artifact proxy (api/2.0/mlflow-artifacts/artifacts/..., which
// `mlflow server --serve-artifacts` offers). A protocol only: it knows nothing of training.
// Every call is one or a few short requests, on the caller's thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace lmforge {

// A call that failed. retry(): the server could not be reached or failed itself (no answer,
// 5xx, 429), so the same call may succeed later; otherwise it refused the call (4xx: a
// deleted run, a wrong address, a bad value), and repeating it changes nothing.
class MlflowError : public Error {
public:
    MlflowError(const std::string& what, bool retry) : Error(what), retry_(retry) {}
    bool retry() const { return retry_; }

private:
    bool retry_;
};

struct MlflowMetric {
    std::string key;
    double value = 0;
    int64_t timestamp_ms = 0;  // MLflow's identity of a value is (key, step, timestamp, value)
    int64_t step = 0;
};

using MlflowPairs = std::vector<std::pair<std::string, std::string>>;  // params, tags

struct MlflowRun {
    std::string run_id, experiment_id, status;
    std::string artifact_uri;  // "mlflow-artifacts:/<experiment>/<run>/artifacts" where proxied
    std::map<std::string, std::string> params;
};

class MlflowClient {
public:
    // tracking_uri: http(s)://host[:port][/prefix], with or without a trailing '/'.
    explicit MlflowClient(std::string tracking_uri);

    const std::string& uri() const { return uri_; }

    // The experiment's id, made if there is none of that name.
    std::string experiment_id(const std::string& name);
    MlflowRun create_run(const std::string& experiment_id, const std::string& run_name, int64_t start_ms,
                         const MlflowPairs& tags);
    MlflowRun get_run(const std::string& run_id);
    // At most kMaxBatchMetrics metrics, kMaxBatchParams params and kMaxBatchTags tags a call.
    void log_batch(const std::string& run_id, const std::vector<MlflowMetric>& metrics, const MlflowPairs& params,
                   const MlflowPairs& tags);
    // The steps at which the run holds a value of `key` (in the server's order, repeats kept).
    std::vector<int64_t> metric_steps(const std::string& run_id, const std::string& key);
    // RUNNING, FINISHED, FAILED or KILLED; end_ms 0 leaves the end time alone.
    void set_status(const std::string& run_id, const std::string& status, int64_t end_ms);
    // Writes `bytes` as <artifact_uri>/<path> through the server's artifact proxy; an
    // artifact_uri of another scheme (a bucket, a directory of the server's) is refused.
    void upload_artifact(const std::string& artifact_uri, const std::string& path, const std::string& bytes);

    static constexpr size_t kMaxBatchMetrics = 1000, kMaxBatchParams = 100, kMaxBatchTags = 100;

private:
    std::string uri_;
};

}  // namespace lmforge
