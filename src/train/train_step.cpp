#include "train/train_step.h"

#include "core/timer.h"

namespace lmforge {

LossSum sum_over(Communicator& comm, LossSum loss) {
    double v[4] = {loss.sum, static_cast<double>(loss.count), static_cast<double>(loss.correct), loss.soft_sum};
    comm.allreduce_sum(v, 4);
    return {v[0], static_cast<int64_t>(v[1]), static_cast<int64_t>(v[2]), v[3]};
}

StepResult train_step(Model& model, DataParallel& dp, std::span<const Batch> micro_batches, float lr,
                      double grad_clip, double loss_scale) {
    Communicator& comm = dp.comm();
    int64_t counted = 0;
    for (const Batch& b : micro_batches) counted += b.counted();
    const double global = comm.allreduce_sum(static_cast<double>(counted));
    const float grad_scale = global > 0 ? static_cast<float>(loss_scale / global) : 0.0f;

    StepResult r;
    Timer timer;
    for (size_t i = 0; i < micro_batches.size(); i++) {
        dp.before_backward(i + 1 == micro_batches.size());
        r.loss += model.forward_backward(micro_batches[i], grad_scale, i > 0);
    }
    r.compute_seconds = timer.seconds();
    timer.reset();
    r.grad_norm = dp.step(lr, grad_clip, loss_scale);
    r.comm_seconds = dp.comm_seconds();
    r.optimizer_seconds = timer.seconds() - r.comm_seconds;
    double sums[5] = {r.loss.sum, static_cast<double>(r.loss.count), static_cast<double>(r.loss.correct),
                      r.loss.soft_sum, 0};
    for (const Batch& b : micro_batches) sums[4] += static_cast<double>(b.B * b.T);
    comm.allreduce_sum(sums, 5);
    r.loss = {sums[0], static_cast<int64_t>(sums[1]), static_cast<int64_t>(sums[2]), sums[3]};
    r.tokens = static_cast<int64_t>(sums[4]);
    return r;
}

}  // namespace lmforge
