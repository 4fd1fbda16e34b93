#include "train/mlflow_tracking.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/log.h"

namespace lmforge {

namespace {

using namespace std::chrono_literals;

// Rounds at most once a second, so a fast run's steps go in batches, not a request each; a
// server that is down is tried again after 1, 2, 4, ... seconds, at most 16 apart.
constexpr auto kRoundInterval = 1s;
constexpr auto kFirstRetry = 1s;
constexpr auto kLongestRetry = 16s;

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

const char* status_name(MlflowTracker::End end) {
    switch (end) {
        case MlflowTracker::End::Finished: return "FINISHED";
        case MlflowTracker::End::Killed: return "KILLED";
        case MlflowTracker::End::Failed: return "FAILED";
    }
    return "FAILED";
}

// run_dir/mlflow.json: which MLflow run this run directory logs to, for a resume to go on in.
std::string run_file(const std::string& run_dir) { return run_dir + "/mlflow.json"; }

}  // namespace

MlflowTracker::MlflowTracker(Setup setup) : setup_(std::move(setup)), client_(setup_.uri) {
    if (setup_.resuming) {
        // What the resume kept of metrics.jsonl: MLflow may lack some (the server was down
        // before the crash, or this run directory never logged to it).
        const int64_t now = now_ms();
        for (const MetricsLine& line : read_metrics_lines(setup_.run_dir)) {
            outbox_.add(line.step, line.group, line.values, now);
        }
    }
    thread_ = std::thread([this] { sender(); });
}

MlflowTracker::~MlflowTracker() {
    if (!thread_.joinable()) return;
    try {
        finish(End::Failed, {});
    } catch (const std::exception& e) {
        log::warn("MLflow: the run's end was not recorded: {}", e.what());
    }
}

void MlflowTracker::add(int64_t step, const std::string& group, const MetricValues& values) {
    if (refused_) return;
    {
        std::lock_guard lock(mutex_);
        outbox_.add(step, group, values, now_ms());
    }
    wake_.notify_one();
    log_notes();
}

void MlflowTracker::finish(End end, const std::vector<std::string>& artifacts) {
    {
        std::lock_guard lock(mutex_);
        end_ = end;
        artifacts_ = artifacts;
    }
    wake_.notify_one();
    thread_.join();
    log_notes();
    if (refused_) return;
    if (!ended_) {
        log::info("MLflow: the server at {} is unreachable: {} metric values and the run's end ({}) are not recorded "
                  "there; running the same command again once it answers records them",
                  setup_.uri, outbox_.size(), status_name(end));
    } else {
        log::info("MLflow: run {} {} ({} metric values sent this session)", run_.run_id, status_name(end), sent_);
    }
}

// The thread: a round when there is work and its time has come, or at once at the end.
void MlflowTracker::sender() {
    auto backoff = kFirstRetry;
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait_until(lock, next_round_, [&] { return end_.has_value(); });
        wake_.wait(lock, [&] { return end_.has_value() || has_work(); });
        const bool closing = end_.has_value();
        lock.unlock();
        const bool ok = round(closing);
        lock.lock();
        if (closing || refused_) return;
        next_round_ = Clock::now() + (ok ? kRoundInterval : backoff);
        backoff = ok ? kFirstRetry : std::min(2 * backoff, decltype(backoff)(kLongestRetry));
    }
}

bool MlflowTracker::has_work() { return run_.run_id.empty() || !params_sent_ || !config_sent_ || !outbox_.empty(); }

// Everything due, in order; false if the server could not be reached or refused.
bool MlflowTracker::round(bool closing) {
    try {
        start_run();
        send_queued();
        if (closing) end_run();
        return true;
    } catch (const MlflowError& e) {
        if (!e.retry()) {
            refused_ = true;
            note(true, fmt::format("MLflow refused the run: {}; its metrics go to metrics.jsonl only", e.what()));
        } else if (!down_) {
            down_ = true;
            note(true, fmt::format("MLflow at {} is unreachable or failing ({}); training goes on, and the metrics "
                                   "wait until the server takes them (metrics.jsonl has them all)",
                                   setup_.uri, e.what()));
        }
        return false;
    } catch (const std::exception& e) {  // an answer not as the protocol says, a full disk
        refused_ = true;
        note(true, fmt::format("MLflow at {}: {}; the run's metrics go to metrics.jsonl only", setup_.uri, e.what()));
        return false;
    }
}

// Said after the first call the server takes again, not at the round's end: a long backlog may
// keep a round going while training adds to it.
void MlflowTracker::answered() {
    if (!down_) return;
    down_ = false;
    note(false, fmt::format("MLflow at {} answers again: the metrics that waited go now", setup_.uri));
}

// Each part once, and in order: a part the server did not take is done again next round.
void MlflowTracker::start_run() {
    if (run_.run_id.empty()) {
        if (!(setup_.resuming && reuse_run())) create_run();
        answered();
    }
    if (!params_sent_) {
        send_params();
        answered();
    }
    if (!config_sent_) {
        upload("config.toml");
        config_sent_ = true;
        answered();
    }
}

// The MLflow run that run_dir/mlflow.json names, if it was made on this server and experiment.
bool MlflowTracker::reuse_run() {
    const std::string path = run_file(setup_.run_dir);
    if (!std::filesystem::exists(path)) return false;
    const auto saved = nlohmann::json::parse(read_text_file(path), nullptr, false);
    if (!saved.is_object() || saved.value("tracking_uri", "") != client_.uri() ||
        saved.value("experiment", "") != setup_.experiment) {
        return false;
    }
    try {
        run_ = client_.get_run(saved.value("run_id", ""));
    } catch (const MlflowError& e) {
        if (e.retry()) throw;
        note(false, fmt::format("MLflow: the run {} is gone ({}): a new one starts", saved.value("run_id", ""),
                                e.what()));
        return false;
    }
    client_.set_status(run_.run_id, "RUNNING", 0);
    client_.log_batch(run_.run_id, {}, {}, setup_.tags);  // this session's (processes may differ)
    std::lock_guard lock(mutex_);
    outbox_.check_server();
    return true;
}

void MlflowTracker::create_run() {
    const std::string experiment_id = client_.experiment_id(setup_.experiment);
    run_ = client_.create_run(experiment_id, setup_.run_name, now_ms(), setup_.tags);
    const nlohmann::json saved = {{"tracking_uri", client_.uri()}, {"experiment", setup_.experiment},
                                  {"experiment_id", run_.experiment_id}, {"run_id", run_.run_id}};
    write_text_atomic(run_file(setup_.run_dir), saved.dump(2) + "\n");
    note(false, fmt::format("MLflow: run {} at {}/#/experiments/{}/runs/{}", setup_.run_name, client_.uri(),
                            run_.experiment_id, run_.run_id));
}

// MLflow keeps a param's first value: a resumed run sends those its MLflow run lacks and names
// those it changed (config.toml, uploaded again, has the new values).
void MlflowTracker::send_params() {
    MlflowPairs missing, changed;
    for (const auto& [key, value] : setup_.params) {
        const auto had = run_.params.find(key);
        if (had == run_.params.end()) missing.emplace_back(key, value);
        else if (had->second != value) changed.emplace_back(key, value);
    }
    for (size_t at = 0; at < missing.size(); at += MlflowClient::kMaxBatchParams) {
        const auto end = std::min(missing.size(), at + MlflowClient::kMaxBatchParams);
        client_.log_batch(run_.run_id, {}, MlflowPairs(missing.begin() + at, missing.begin() + end), {});
    }
    if (!changed.empty()) {
        std::string keys;
        for (const auto& [key, value] : changed) keys += (keys.empty() ? "" : ", ") + key + " = " + value;
        note(true, fmt::format("MLflow keeps the params the run started with; changed since: {} (the uploaded "
                               "config.toml has them)",
                               keys));
    }
    params_sent_ = true;
}

// A file of the run directory as an artifact; a server that serves no artifacts is said once
// and skipped, as a file the run did not write.
void MlflowTracker::upload(const std::string& path) {
    const std::string file = setup_.run_dir + "/" + path;
    if (artifacts_refused_ || !std::filesystem::exists(file)) return;
    try {
        client_.upload_artifact(run_.artifact_uri, path, read_text_file(file));
    } catch (const MlflowError& e) {
        if (e.retry()) throw;
        artifacts_refused_ = true;
        note(true, fmt::format("MLflow took no artifacts: {}", e.what()));
    }
}

void MlflowTracker::send_queued() {
    for (;;) {
        std::vector<std::string> unknown;
        {
            std::lock_guard lock(mutex_);
            unknown = outbox_.unknown_keys(MlflowClient::kMaxBatchMetrics);
        }
        for (const std::string& key : unknown) {
            const std::vector<int64_t> steps = client_.metric_steps(run_.run_id, key);
            answered();
            std::lock_guard lock(mutex_);
            outbox_.known(key, steps);
        }
        MlflowOutbox::Batch batch;
        {
            std::lock_guard lock(mutex_);
            batch = outbox_.next(MlflowClient::kMaxBatchMetrics);
        }
        if (batch.covers == 0) return;
        if (!batch.metrics.empty()) {
            client_.log_batch(run_.run_id, batch.metrics, {}, {});
            answered();
        }
        std::lock_guard lock(mutex_);
        outbox_.settled(batch);
        sent_ += static_cast<int64_t>(batch.metrics.size());
    }
}

void MlflowTracker::end_run() {
    for (const std::string& path : artifacts_) upload(path);
    client_.set_status(run_.run_id, status_name(*end_), now_ms());
    answered();
    ended_ = true;
}

void MlflowTracker::note(bool warning, std::string text) {
    std::lock_guard lock(mutex_);
    notes_.emplace_back(warning, std::move(text));
}

// On the training thread: the logger's stderr may be a progress bar's, which is not
// thread-safe.
void MlflowTracker::log_notes() {
    std::vector<std::pair<bool, std::string>> notes;
    {
        std::lock_guard lock(mutex_);
        notes.swap(notes_);
    }
    for (const auto& [warning, text] : notes) {
        if (warning) log::warn("{}", text);
        else log::info("{}", text);
    }
}

}  // namespace lmforge
