// A run's measurements: run_dir/metrics.jsonl, one JSON object per line, each with "step"
// and what was measured then (loss, lr, grad_norm, tokens_per_s, val_loss, ...), and the same
// as TensorBoard scalars. Resuming at step N keeps the lines of earlier steps only: the killed
// run may have logged steps past its last checkpoint, which the resumed run logs again.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/tensorboard.h"

namespace lmforge {

using MetricValues = std::vector<std::pair<std::string, double>>;

class MetricsLog {
public:
    // What else takes every line as it is written (a tracking server's sender).
    using Sink = std::function<void(int64_t step, const std::string& group, const MetricValues& values)>;

    // keep_before: on resume, the step the run continues from (lines of later steps go);
    // 0 starts a fresh file.
    MetricsLog(const std::string& run_dir, bool tensorboard, int64_t keep_before);
    ~MetricsLog();

    // group tags the TensorBoard scalars ("train", "val").
    void write(int64_t step, const std::string& group, const MetricValues& values);
    void also_to(Sink sink) { sink_ = std::move(sink); }

private:
    std::string path_;
    Sink sink_;
    std::FILE* file_ = nullptr;
    std::unique_ptr<TensorBoardWriter> tb_;
};

// A line of metrics.jsonl as it was written: its step, its group, which follows from its keys
// (an epoch's tally holds epoch_loss, eval.multiple_choice's mc_accuracy, a training step's
// loss, a validation none of them), and its values, those lmforge wrote as null (not finite)
// left out.
struct MetricsLine {
    int64_t step = 0;
    std::string group;
    MetricValues values;
};
// The lines of run_dir/metrics.jsonl, in order (none if there is no file); a half-written last
// line, of a writer that was killed, is left out.
std::vector<MetricsLine> read_metrics_lines(const std::string& run_dir);

}  // namespace lmforge
