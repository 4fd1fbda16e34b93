#include "distributed/grad_sync.h"

#include <cassert>

#include "core/timer.h"

namespace lmforge {

GradSync::GradSync(Communicator& comm, float* grads, int64_t total, int64_t bucket_floats, bool overlap)
    : comm_(comm), grads_(grads), total_(total), bucket_floats_(bucket_floats), overlap_(overlap) {}

void GradSync::begin() {
    launched_from_ = ready_from_ = total_;
    wait_seconds_ = 0;
    buckets_ = 0;
}

void GradSync::ready(int64_t begin, int64_t end) {
    assert(end == ready_from_ && "gradients become final from the end of the buffer backwards");
    (void)end;
    ready_from_ = begin;
    if (!overlap_) return;
    if (launched_from_ - ready_from_ >= bucket_floats_) {
        comm_.start_allreduce_sum(grads_ + ready_from_, launched_from_ - ready_from_);
        launched_from_ = ready_from_;
        buckets_++;
    }
    comm_.progress();
}

void GradSync::finish() {
    Timer t;
    if (launched_from_ > 0) {
        comm_.start_allreduce_sum(grads_, launched_from_);
        launched_from_ = 0;
        buckets_++;
    }
    comm_.wait_all();
    wait_seconds_ = t.seconds();
}

}  // namespace lmforge
