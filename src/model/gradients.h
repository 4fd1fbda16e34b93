// The gradients backward writes, laid out as the parameters (model/param_layout.h).
//
// fp32: one flat buffer, which backward writes in place.
//
// bf16 (train.grads = "bf16", with mixed precision): the flat buffer is bfloat16, half the
// memory. Backward writes each range of the layout it finishes together (a block's tensors)
// into an fp32 window first; closing the range rounds the window into the buffer once, adding
// what the buffer holds when micro-steps accumulate. The kernels and their fp32 sums are those
// of the fp32 path: only the stored result is rounded. A tensor too large for the window (a
// token embedding, an LM head's matrix) is written in bf16 by its kernels directly, through
// 8 MiB of fp32 sums (kernels/grad_out.h).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/aligned_buffer.h"
#include "kernels/grad_out.h"

namespace lmforge {

class Gradients {
public:
    explicit Gradients(int64_t total) : fp32_(static_cast<size_t>(total)), total_(total) {}

    // From now on in bf16: the fp32 buffer is freed. window: the floats of the largest range
    // backward will open; zero_on_open: the ranges (offset, length) backward adds into rather
    // than writes, which opening a window over them zeroes.
    void keep_in_bf16(int64_t window, std::vector<std::pair<int64_t, int64_t>> zero_on_open);
    bool in_bf16() const { return bf16_.size() > 0; }

    std::span<float> fp32() { return fp32_.span(); }  // empty in bf16
    std::span<const float> fp32() const { return fp32_.span(); }
    std::span<uint16_t> bf16() { return bf16_.span(); }  // empty in fp32
    std::span<const uint16_t> bf16() const { return bf16_.span(); }
    int64_t total() const { return total_; }
    // The floats the last backward's windows zeroed as they opened (bf16; 0 in fp32).
    int64_t zeroed() const { return zeroed_; }
    // The floats the last backward rounded from its windows into the buffer (bf16).
    int64_t rounded() const { return rounded_; }
    size_t bytes() const {
        return fp32_.size() * sizeof(float) + bf16_.size() * sizeof(uint16_t) +
               (window_.size() + block_sums_.size()) * sizeof(float);
    }

    // Where backward writes the gradient at flat offset `offset`: in the fp32 buffer, or in
    // bf16 in the open window, which must cover it.
    float* at(int64_t offset);
    // bf16: where a kernel writes the tensor at `offset` in bf16 directly, with the room for a
    // block of its fp32 sums (kernels/grad_out.h).
    kernels::GradOut bf16_at(int64_t offset) {
        return {bf16_.data() + offset, block_sums_.data(), static_cast<int64_t>(block_sums_.size())};
    }

    // bf16: a backward starts; accumulate: closing adds to what the buffer holds.
    void begin(bool accumulate) {
        accumulate_ = accumulate;
        rounded_ = zeroed_ = 0;
    }
    bool accumulating() const { return accumulate_; }
    // bf16: backward is about to write [begin, end) into the window; fp32: nothing to do.
    void open(int64_t begin, int64_t end);
    // bf16: [begin, end) is final: the part of it the open window covers is rounded into the
    // buffer (the rest was written in bf16 directly). fp32: nothing to do.
    void close(int64_t begin, int64_t end);

private:
    AlignedBuffer<float> fp32_;
    AlignedBuffer<uint16_t> bf16_;
    AlignedBuffer<float> window_;
    AlignedBuffer<float> block_sums_;  // kernels' fp32 sums of a block before rounding
    std::vector<std::pair<int64_t, int64_t>> zero_on_open_;
    int64_t total_ = 0;
    int64_t open_begin_ = 0, open_end_ = 0;
    int64_t rounded_ = 0, zeroed_ = 0;
    bool accumulate_ = false;
};

}  // namespace lmforge
