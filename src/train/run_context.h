// What a training run stands on besides its task and model: its processes (one, or many under
// mpirun) and their threads, the GEMM backend and the precision, and the run directory,
// writable, locked by the lead process (rank 0) for the run's whole life, with what killed
// saves left behind cleared.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backend/gemm.h"
#include "checkpoint/checkpoint_store.h"
#include "core/directory_lock.h"
#include "distributed/communicator.h"
#include "model/precision.h"
#include "train/config.h"

namespace lmforge {

class RunContext {
public:
    // Touches no file: the inputs are checked first.
    RunContext(const TrainConfig& cfg, const std::string& run_dir);
    ~RunContext();  // the run's log file closes

    // The run directory, created if need be, writable and locked by the lead (every process
    // learns if that failed), its stale temporaries gone.
    void take_run_dir();

    Communicator& comm() { return *comm_; }
    int rank() const { return comm_->rank(); }
    int world() const { return comm_->size(); }
    bool lead() const { return comm_->rank() == 0; }
    backend::Gemm& gemm() { return *gemm_; }
    Precision precision() const { return precision_; }  // the model's: fp32 under fp16
    bool fp16() const { return fp16_; }  // train.precision = "fp16": fp16 GEMM inputs, loss scaling
    const std::string& run_dir() const { return run_dir_; }
    CheckpointStore& store() { return store_; }

    // The lead logs to run_dir/train.log from now on: once the run's inputs passed every check.
    void log_to_run_dir() const;
    // "on HOST (CPU), N process(es) (mpi) x T threads, bf16 (why)": the run's first log line.
    std::string describe() const;

private:
    std::string run_dir_;
    std::unique_ptr<Communicator> comm_;
    std::optional<DirectoryLock> lock_;
    CheckpointStore store_;
    std::unique_ptr<backend::Gemm> gemm_;
    Precision precision_;
    bool fp16_ = false;
    std::string precision_why_;
};

// The run directory a config names: run.dir, else runs/<config file's stem>.
std::string run_dir_for(const TrainConfig& c, const std::string& config_path);

}  // namespace lmforge
