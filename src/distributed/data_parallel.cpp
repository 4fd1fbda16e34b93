#include "distributed/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/timer.h"
#include "kernels/grad_norm.h"
#include "optim/grad_clip.h"

namespace lmforge {

DataParallel::DataParallel(Communicator& comm, Model& model, const AdamWConfig& cfg, const ParallelOptions& opts)
    : comm_(comm), model_(model), opts_(opts) {
    const int64_t total = static_cast<int64_t>(model.params().size());
    const bool bf16 = model.grads_in_bf16();
    if (opts_.zero_stage == 1) {
        shard_ = shard_counts(total, comm.size());
        const int64_t begin = std::accumulate(shard_.begin(), shard_.begin() + comm.rank(), int64_t{0});
        adam_ = std::make_unique<AdamW>(model.layout(), cfg, begin, begin + shard_[comm.rank()]);
        const auto mine = static_cast<size_t>(shard_[comm.rank()]);
        if (bf16) shard_grads_h_ = AlignedBuffer<uint16_t>(mine);
        if (!bf16) shard_grads_ = AlignedBuffer<float>(mine);
    } else {
        adam_ = std::make_unique<AdamW>(model.layout(), cfg);
        if (comm.size() > 1 && bf16) {
            sync_ = std::make_unique<GradSync>(comm, model.grads_bf16().data(), total, opts_.bucket_floats,
                                               opts_.overlap);
        } else if (comm.size() > 1) {
            sync_ = std::make_unique<GradSync>(comm, model.grads().data(), total, opts_.bucket_floats, opts_.overlap);
        }
    }
}

void DataParallel::before_backward(bool last_micro_step) {
    if (!sync_) return;
    if (last_micro_step) {
        sync_->begin();
        model_.set_grads_ready_hook([this](int64_t begin, int64_t end) { sync_->ready(begin, end); });
    } else {
        model_.set_grads_ready_hook({});
    }
}

namespace {

// What AdamW multiplies the summed gradients by: clipping's factor for the true norm, and one
// over the loss scale they carry.
float unscale(double norm, double grad_clip, double loss_scale) {
    return static_cast<float>(clip_factor(norm, grad_clip) / loss_scale);
}

}  // namespace

double DataParallel::step(float lr, double grad_clip, double loss_scale) {
    if (model_.grads_in_bf16()) return step_on(model_.grads_bf16().data(), shard_grads_h_, lr, grad_clip, loss_scale);
    return step_on(model_.grads().data(), shard_grads_, lr, grad_clip, loss_scale);
}

template <class Grad>
double DataParallel::step_on(Grad* grads, AlignedBuffer<Grad>& shard_grads, float lr, double grad_clip,
                             double loss_scale) {
    float* params = model_.params().data();
    const auto total = static_cast<int64_t>(model_.params().size());
    if (opts_.zero_stage == 1) {
        Timer t;
        comm_.reduce_scatter_sum(grads, shard_grads.data(), shard_);
        const double norm = std::sqrt(comm_.allreduce_sum(
            kernels::sum_of_squares(shard_grads.data(), static_cast<int64_t>(shard_grads.size())))) / loss_scale;
        comm_seconds_ = t.seconds();
        if (!std::isfinite(norm)) return norm;  // every rank sees the same norm: all skip
        adam_->step(params + adam_->begin(), shard_grads.data(), lr, unscale(norm, grad_clip, loss_scale));
        t.reset();
        comm_.allgather_in_place(params, shard_);
        comm_seconds_ += t.seconds();
        model_.weights_changed();  // other ranks' shards arrived in fp32: refresh the bf16 copy
        return norm;
    }
    comm_seconds_ = 0;
    if (sync_) {
        sync_->finish();
        model_.set_grads_ready_hook({});
        comm_seconds_ = sync_->wait_seconds();
    }
    if (profiler_ != nullptr) profiler_->start();
    const double norm = grad_norm(grads, total) / loss_scale;
    if (profiler_ != nullptr) profiler_->lap("grad_norm");
    if (!std::isfinite(norm)) return norm;
    adam_->step(params, grads, lr, unscale(norm, grad_clip, loss_scale), model_.half_weights());
    if (profiler_ != nullptr) profiler_->lap("adamw");
    return norm;
}

DataParallel::MomentsToSave DataParallel::moments_for_save(int root) {
    if (opts_.zero_stage != 1) return {Moments(), {adam_->moments(), adam_->steps_taken()}};
    const MomentSpans shard = adam_->moments();
    Moments gathered;
    if (comm_.rank() == root) gathered = Moments(shard.precision, static_cast<size_t>(model_.params().size()));
    MomentSpans all = gathered.spans();
    all.precision = shard.precision;  // also where nothing was gathered
    if (shard.precision == MomentPrecision::F32) {
        comm_.gather(shard.m.data(), all.m.data(), shard_, root);
        comm_.gather(shard.v.data(), all.v.data(), shard_, root);
    } else {
        comm_.gather(shard.m_bf16.data(), all.m_bf16.data(), shard_, root);
        comm_.gather(shard.v_bf16.data(), all.v_bf16.data(), shard_, root);
    }
    return {std::move(gathered), {all, adam_->steps_taken()}};
}

OptimizerMoments DataParallel::moments_for_load() {
    // Under ZeRO-1 the optimizer's moments are this rank's shard, from adam_->begin() on.
    return {adam_->moments(), 0, adam_->begin()};
}

void DataParallel::adopt_loaded(const OptimizerMoments& loaded) { adam_->set_steps_taken(loaded.steps); }

int64_t DataParallel::moment_bytes() const {
    return static_cast<int64_t>(adam_->moment_bytes() + shard_grads_.size() * sizeof(float) +
                                shard_grads_h_.size() * sizeof(uint16_t));
}

}  // namespace lmforge
