// `lmforge train`: the training loop, in nanoGPT's order — learning rate for the step;
// evaluation and checkpoint when due; micro-steps (forward, loss scaled by 1/accumulation,
// backward); gradient norm and clipping (folded into AdamW); AdamW; metrics and log — with
// exact resume from the run directory's latest checkpoint.
#pragma once

#include <string>
#include <vector>

#include "train/config.h"

namespace lmforge {

struct TrainOptions {
    TrainConfig config;
    std::string config_path;  // names the run directory by default
    bool resume = false;      // demand a checkpoint to resume from
};

struct TrainSummary {
    std::string run_dir;
    int64_t steps = 0, start_step = 0;
    double train_loss = 0, val_loss = 0, val_perplexity = 0;
    double seconds = 0;  // this session
    double tokens_per_s = 0;
    std::vector<std::string> plots;
    std::vector<std::string> samples;
    int rank = 0;  // of this process: only rank 0 reports
    int stopped_by = 0;  // the signal that stopped the run at `steps`, before max_steps (0: none)
    std::string checkpoint;  // where a stopped run resumes from
};

TrainSummary train(const TrainOptions& opts);

// The run directory a config names: run.dir, else runs/<config file's stem>.
std::string run_dir_for(const TrainConfig& c, const std::string& config_path);

}  // namespace lmforge
