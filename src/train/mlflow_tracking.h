// A run's record on an MLflow tracking server (log.mlflow_uri), kept by the lead process on a
// thread of its own so that training never waits on the network. At the start the MLflow run
// (a resumed run goes on in its own: run_dir/mlflow.json names it), the resolved configuration
// as params, the tags and config.toml; then every metrics.jsonl line as it is written, in
// batches; at the end the plots and the status (FINISHED, KILLED by a stop signal, FAILED by an
// exception). A server that is down or failing costs one warning: the metrics wait and go when
// it answers again, none lost and none sent twice (train/mlflow_outbox.h). A server that
// refuses (a wrong address, a deleted run) ends the tracking with a warning. metrics.jsonl
// stays the record either way.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "io/mlflow_client.h"
#include "train/metrics.h"
#include "train/mlflow_outbox.h"

namespace lmforge {

class MlflowTracker {
public:
    struct Setup {
        std::string uri, experiment, run_name, run_dir;
        // Goes on from a checkpoint: the MLflow run goes on too, and the metrics.jsonl lines the
        // resume kept are sent again where MLflow lacks them.
        bool resuming = false;
        MlflowPairs params, tags;
    };
    enum class End { Finished, Failed, Killed };

    explicit MlflowTracker(Setup setup);
    ~MlflowTracker();  // without finish(), as when an exception unwinds: the run ends FAILED
    MlflowTracker(const MlflowTracker&) = delete;
    MlflowTracker& operator=(const MlflowTracker&) = delete;

    // A metrics.jsonl line, queued; also logs what the sender has to say since the last call.
    void add(int64_t step, const std::string& group, const MetricValues& values);
    // The queued metrics go (a server still down gets one more try, not a wait), then the
    // artifacts (paths in the run directory) and the status; returns when that is done. A
    // server that takes connections but hangs holds it up to a request's time-out (30 s).
    void finish(End end, const std::vector<std::string>& artifacts);

private:
    using Clock = std::chrono::steady_clock;

    void sender();
    bool has_work();
    bool round(bool closing);
    void answered();
    void start_run();
    bool reuse_run();
    void create_run();
    void send_params();
    void upload(const std::string& path);
    void send_queued();
    void end_run();
    void note(bool warning, std::string text);
    void log_notes();

    Setup setup_;
    MlflowClient client_;
    // The sender's own (read by the training thread only after it has ended).
    MlflowRun run_;
    bool params_sent_ = false, config_sent_ = false, artifacts_refused_ = false;
    bool down_ = false, ended_ = false;
    std::atomic<bool> refused_{false};  // then add() queues nothing more
    int64_t sent_ = 0;
    // Shared with the training thread, under mutex_.
    std::mutex mutex_;
    std::condition_variable wake_;
    MlflowOutbox outbox_;
    std::vector<std::pair<bool, std::string>> notes_;  // (a warning?, text), to be logged
    std::optional<End> end_;
    std::vector<std::string> artifacts_;
    Clock::time_point next_round_ = Clock::now();
    std::thread thread_;
};

}  // namespace lmforge
