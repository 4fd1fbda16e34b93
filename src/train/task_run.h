// What the task trainers (classify, mlm, sft) share around their own loops: the processes
// (one, or many under mpirun), threads, the GEMM backend and precision; the run directory with
// its log, resolved config and metrics; the model's starting weights (its init, then
// model.init_from, then rank 0's copy everywhere); the optimizer across ranks; the schedule.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/gemm.h"
#include "core/directory_lock.h"
#include "distributed/communicator.h"
#include "distributed/data_parallel.h"
#include "model/model.h"
#include "model/precision.h"
#include "optim/lr_schedule.h"
#include "tokenizer/tokenizer.h"
#include "train/config.h"
#include "train/metrics.h"

namespace lmforge {

class TaskRun {
public:
    // Starts the processes and threads and picks the precision; rank 0 locks the run directory
    // and logs to its train.log.
    TaskRun(const TrainConfig& cfg, const std::string& run_dir);
    ~TaskRun();

    // Initialises the model, loads model.init_from's matching tensors (InputError if it holds
    // none of them; those it lacks are logged), makes the weights the same on every rank, plans
    // for (B, T), the largest batch, and sets up the optimizer across ranks. Then rank 0 writes
    // the run's config.toml, tokenizer/ and (new) metrics: a refusal up to here changes none.
    void start_model(Model& model, int64_t B, int64_t T);
    DataParallel& data_parallel() { return *dp_; }
    // Warm-up and decay over total_steps (the warm-up at most half of them).
    LrSchedule schedule(int64_t total_steps) const;
    // "N process(es) x T threads, bf16 (why)": for a task's first log line.
    std::string describe() const;

    Communicator& comm() { return *comm_; }
    int world() const { return comm_->size(); }
    int rank() const { return comm_->rank(); }
    bool lead() const { return comm_->rank() == 0; }
    backend::Gemm& gemm() { return *gemm_; }
    Precision precision() const { return precision_; }
    MetricsLog* metrics() { return metrics_.get(); }  // after start_model, on the lead process
    // The data's tokenizer, on the lead process after start_model (null elsewhere, or where
    // there is none).
    const Tokenizer* tokenizer() const { return tokenizer_.get(); }
    // At the end, on the lead process with log.plots: the loss curves from the metrics (by
    // epoch or step, as the task wrote them), their paths logged.
    void write_plots() const;

private:
    void write_records();  // the lead's config.toml, tokenizer/ and metrics

    const TrainConfig& cfg_;
    std::string run_dir_;
    std::unique_ptr<Communicator> comm_;
    std::optional<DirectoryLock> run_lock_;  // the lead's, for the run's whole life
    std::unique_ptr<backend::Gemm> gemm_;
    Precision precision_;
    std::string precision_why_;
    std::unique_ptr<MetricsLog> metrics_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<DataParallel> dp_;
};

}  // namespace lmforge
