// `lmforge train`: the one training loop, for every task (train/task.h), in nanoGPT's order:
// the step's learning rate; the evaluation, checkpoint and samples that fall due; the step
// itself (train/train_step.h); metrics and the log. Every task gets all the loop guarantees:
// checkpoints every checkpoint.every steps and at each epoch's end, best/, latest and final/,
// an automatic and exact resume from the run directory's latest checkpoint (bit for bit at the
// same thread count, on any number of processes within the run's global batch), and a stop
// signal that finishes the step, saves and exits.
#pragma once

#include <cstdint>
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
    int64_t steps = 0, start_step = 0, total_steps = 0;
    double train_loss = 0;    // the last step's
    double val_loss = 0;      // the last evaluation's (NaN: none)
    std::string evaluation;   // the last evaluation as the log shows it (empty: none)
    std::string multiple_choice;  // the last eval.multiple_choice evaluation, the same way
    double seconds = 0;       // this session
    double tokens_per_s = 0;
    std::vector<std::string> plots;
    std::vector<std::string> samples;
    std::vector<std::string> first_samples;  // drawn at step 0, untrained (lm)
    std::string report;       // the task's end-of-run report
    int rank = 0;             // of this process: only rank 0 reports
    int stopped_by = 0;       // the signal that stopped the run at `steps`, before its end (0: none)
    std::string checkpoint;   // where a stopped run resumes from
};

TrainSummary train(const TrainOptions& opts);

}  // namespace lmforge
