#include "model/gradients.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "kernels/bf16.h"

namespace lmforge {

namespace {

// A block of fp32 sums small enough to be read back from cache (and a row of any width), or
// the whole of a smaller model.
constexpr size_t kBlockSumFloats = size_t{2} << 20;

}  // namespace

void Gradients::keep_in_bf16(int64_t window, std::vector<std::pair<int64_t, int64_t>> zero_on_open) {
    fp32_ = AlignedBuffer<float>();
    bf16_ = AlignedBuffer<uint16_t>(static_cast<size_t>(total_));
    window_ = AlignedBuffer<float>(static_cast<size_t>(window));
    block_sums_ = AlignedBuffer<float>(std::min(kBlockSumFloats, static_cast<size_t>(total_)));
    zero_on_open_ = std::move(zero_on_open);
}

float* Gradients::at(int64_t offset) {
    if (!in_bf16()) return fp32_.data() + offset;
    if (offset < open_begin_ || offset >= open_end_) {
        throw Error(fmt::format("gradient at {} written outside the open window [{}, {})", offset, open_begin_,
                                open_end_));
    }
    return window_.data() + (offset - open_begin_);
}

void Gradients::open(int64_t begin, int64_t end) {
    if (!in_bf16()) return;
    if (end - begin > static_cast<int64_t>(window_.size())) {
        throw Error(fmt::format("a gradient window of {} floats opened over {}", window_.size(), end - begin));
    }
    open_begin_ = begin;
    open_end_ = end;
    for (const auto& [offset, length] : zero_on_open_) {
        const int64_t lo = std::max(begin, offset), hi = std::min(end, offset + length);
        if (lo < hi) std::fill_n(window_.data() + (lo - begin), hi - lo, 0.0f);
        zeroed_ += std::max<int64_t>(0, hi - lo);
    }
}

void Gradients::close(int64_t begin, int64_t end) {
    if (!in_bf16()) return;
    begin = std::max(begin, open_begin_);
    end = std::min(end, open_end_);
    if (begin >= end) return;
    rounded_ += end - begin;
    const float* w = window_.data() + (begin - open_begin_);
    if (accumulate_) {
        kernels::add_to_bf16(bf16_.data() + begin, w, end - begin);
    } else {
        kernels::to_bf16(bf16_.data() + begin, w, end - begin);
    }
}

}  // namespace lmforge
