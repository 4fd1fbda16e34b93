// A run's measurements: run_dir/metrics.jsonl, one JSON object per line, each with "step"
// and what was measured then (loss, lr, grad_norm, tokens_per_s, val_loss, ...), and the same
// as TensorBoard scalars. Resuming at step N keeps the lines of earlier steps only: the killed
// run may have logged steps past its last checkpoint, which the resumed run logs again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/tensorboard.h"

namespace lmforge {

class MetricsLog {
public:
    // keep_before: on resume, the step the run continues from (lines of later steps go);
    // 0 starts a fresh file.
    MetricsLog(const std::string& run_dir, bool tensorboard, int64_t keep_before);
    ~MetricsLog();

    // group tags the TensorBoard scalars ("train", "val").
    void write(int64_t step, const std::string& group, const std::vector<std::pair<std::string, double>>& values);

private:
    std::string path_;
    std::FILE* file_ = nullptr;
    std::unique_ptr<TensorBoardWriter> tb_;
};

}  // namespace lmforge
