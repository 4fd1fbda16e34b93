// One optimizer step, the only place it is spelt out: the trainer of every task and `bench`
// call it. Each micro-batch's forward and backward, the gradients accumulated and, during the
// last micro-batch's backward, synchronised over the processes; then the gradient norm,
// clipping and AdamW (distributed/data_parallel.h).
//
// The loss is the mean over every counted target (or label) of the global batch: the counts
// of all micro-batches on all processes are summed before the first forward, and each
// gradient is scaled by one over that sum. So 2 processes with B sequences each train as one
// with 2B, also where micro-batches count different numbers of tokens (instruction tuning's
// responses, masked LM's masks), which a mean of per-process means would not.
#pragma once

#include <span>

#include "distributed/data_parallel.h"
#include "model/batch.h"
#include "model/model.h"

namespace lmforge {

struct StepResult {
    LossSum loss;              // over every micro-batch of every process
    int64_t tokens = 0;        // in those batches, padding included
    double grad_norm = 0;      // of the summed gradient, before clipping
    double compute_seconds = 0;    // forwards and backwards
    double optimizer_seconds = 0;  // norm, clipping and AdamW, without waiting for other processes
    double comm_seconds = 0;       // waiting for the gradient sync, not hidden by compute
};

// The sums over every process (a collective).
LossSum sum_over(Communicator& comm, LossSum loss);

// loss_scale (fp16's loss scaling, optim/loss_scaler.h) multiplies the gradients backward
// computes and is divided out before the update; a step whose gradients overflowed is not
// taken, and its grad_norm is not finite.
StepResult train_step(Model& model, DataParallel& dp, std::span<const Batch> micro_batches, float lr,
                      double grad_clip, double loss_scale = 1.0);

}  // namespace lmforge
