#include "distributed/grad_sync.h"

#include <cassert>

#include "core/timer.h"

namespace lmforge {

GradSync::GradSync(Communicator& comm, float* grads, int64_t total, int64_t bucket_floats, bool overlap)
    : comm_(comm), grads_(grads), total_(total), bucket_floats_(bucket_floats), overlap_(overlap) {}

// Buckets of the same bytes: twice the elements.
GradSync::GradSync(Communicator& comm, uint16_t* grads_h, int64_t total, int64_t bucket_floats, bool overlap)
    : comm_(comm), grads_h_(grads_h), total_(total), bucket_floats_(2 * bucket_floats), overlap_(overlap) {}

void GradSync::launch(int64_t begin, int64_t end) {
    if (grads_ != nullptr) comm_.start_allreduce_sum(grads_ + begin, end - begin);
    if (grads_h_ != nullptr) comm_.start_allreduce_sum(grads_h_ + begin, end - begin);
    buckets_++;
}

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
        launch(ready_from_, launched_from_);
        launched_from_ = ready_from_;
    }
    comm_.progress();
}

void GradSync::finish() {
    Timer t;
    if (launched_from_ > 0) {
        launch(0, launched_from_);
        launched_from_ = 0;
    }
    comm_.wait_all();
    wait_seconds_ = t.seconds();
}

}  // namespace lmforge
