// Summing gradients over ranks in buckets, each all-reduced (non-blocking) as soon as backward
// has finished the gradients in it, so communication overlaps the rest of backward.
//
// Backward finishes the flat gradient buffer from its end towards its start (the layout puts
// the last block last, and backward runs from the last block): ready(begin, end) calls come
// in that order, and a bucket is launched whenever the ready region below the last launched
// one reaches bucket_floats. finish() launches the rest and waits.
#pragma once

#include <cstdint>

#include "distributed/communicator.h"

namespace lmforge {

class GradSync {
public:
    // overlap false: nothing starts during backward; finish() all-reduces the whole buffer.
    // The gradients are fp32, or bf16 (grads_h): buckets of bucket_floats · 4 bytes either way.
    GradSync(Communicator& comm, float* grads, int64_t total, int64_t bucket_floats, bool overlap);
    GradSync(Communicator& comm, uint16_t* grads_h, int64_t total, int64_t bucket_floats, bool overlap);

    void begin();                         // a new backward starts
    void ready(int64_t begin, int64_t end);  // [begin, end) is final; also lets MPI progress
    void finish();                        // all gradients summed over ranks when it returns

    double wait_seconds() const { return wait_seconds_; }  // in finish(): communication not hidden
    int64_t buckets() const { return buckets_; }

private:
    void launch(int64_t begin, int64_t end);  // all-reduces [begin, end), non-blocking

    Communicator& comm_;
    float* grads_ = nullptr;
    uint16_t* grads_h_ = nullptr;
    int64_t total_, bucket_floats_;
    bool overlap_;
    int64_t launched_from_ = 0;  // everything at and above this offset is on its way
    int64_t ready_from_ = 0;     // everything at and above this offset is final
    double wait_seconds_ = 0;
    int64_t buckets_ = 0;
};

}  // namespace lmforge
