// The optimizer step of data-parallel training over a Communicator. Every rank computes
// gradients on its own part of the batch; then either
//  - plain: the gradients are summed over ranks in buckets all-reduced while backward is
//    still running (grad_sync.h), and every rank runs AdamW on all parameters; or
//  - ZeRO-1: each rank owns one shard of the flat buffer: the gradients are reduce-scattered,
//    AdamW updates the shard (moments for the shard only: 1/world of the memory), and the
//    parameters are all-gathered.
// With one process both are a plain AdamW step.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "core/aligned_buffer.h"
#include "core/profiler.h"
#include "distributed/communicator.h"
#include "distributed/grad_sync.h"
#include "model/model.h"
#include "optim/adamw.h"
#include "optim/moments.h"

namespace lmforge {

struct ParallelOptions {
    int zero_stage = 0;                        // 0 or 1
    int64_t bucket_floats = 25 * 1024 * 1024 / 4;  // 25 MB buckets, as PyTorch's DDP
    bool overlap = true;                       // all-reduce buckets during backward
};

class DataParallel {
public:
    DataParallel(Communicator& comm, Model& model, const AdamWConfig& cfg, const ParallelOptions& opts);

    // Before each micro-step's backward; the last micro-step of a step syncs the gradients.
    void before_backward(bool last_micro_step);
    // After the step's last backward: sums gradients over ranks, clips (grad_clip 0: not),
    // runs AdamW. Returns the global gradient norm before clipping. loss_scale: the factor the
    // gradients were scaled by (fp16's loss scaling), divided out of the norm and the update; a
    // norm that is not finite (an overflow) skips the update and is returned as it is.
    double step(float lr, double grad_clip, double loss_scale = 1.0);

    // Moments over the whole layout for a checkpoint, complete on `root` (collective: every
    // rank calls it). Under ZeRO-1, root's whole-layout copy lives as long as the returned
    // object, and no other rank makes one: between checkpoints each rank holds its shard only.
    class MomentsToSave {
    public:
        MomentsToSave(Moments gathered, OptimizerMoments view) : gathered_(std::move(gathered)), view_(view) {}
        // The whole layout's moments (empty off root under ZeRO-1); they may point into this
        // object, so not from a temporary.
        const OptimizerMoments& moments() const& { return view_; }
        const OptimizerMoments& moments() const&& = delete;

    private:
        Moments gathered_;  // ZeRO-1, on root
        OptimizerMoments view_;
    };
    MomentsToSave moments_for_save(int root);
    // Where a checkpoint's moments load: the optimizer's own, which under ZeRO-1 are this
    // rank's shard only (no rank holds the whole layout while loading). adopt_loaded() then
    // takes the loaded step count.
    OptimizerMoments moments_for_load();
    void adopt_loaded(const OptimizerMoments& loaded);

    Communicator& comm() { return comm_; }
    // Times the gradient norm and AdamW into `profiler` as rows of their own (null: no timing).
    void set_profiler(Profiler* profiler) { profiler_ = profiler; }
    double comm_seconds() const { return comm_seconds_; }  // the last step's, not hidden by compute
    int64_t buckets() const { return sync_ ? sync_->buckets() : 0; }  // the last step's all-reduces
    int64_t moment_bytes() const;                          // optimizer state held by this rank
    const AdamW& optimizer() const { return *adam_; }

private:
    // step() on the model's fp32 or bf16 gradients; shard_grads: ZeRO-1's of the same type.
    template <class Grad>
    double step_on(Grad* grads, AlignedBuffer<Grad>& shard_grads, float lr, double grad_clip, double loss_scale);

    Communicator& comm_;
    Model& model_;
    ParallelOptions opts_;
    std::vector<int64_t> shard_;  // ZeRO-1: elements each rank owns
    std::unique_ptr<AdamW> adam_;
    std::unique_ptr<GradSync> sync_;
    AlignedBuffer<float> shard_grads_;     // ZeRO-1: this rank's summed gradients
    AlignedBuffer<uint16_t> shard_grads_h_;  // the same where the gradients are kept in bf16
    double comm_seconds_ = 0;
    Profiler* profiler_ = nullptr;
};

}  // namespace lmforge
