// A bump allocator over one aligned block: everything a step needs is carved out once, at
// plan time, so nothing is allocated while training. mark()/reset() give scoped scratch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/aligned_buffer.h"

namespace lmforge {

class Arena {
public:
    Arena() = default;
    explicit Arena(size_t capacity_bytes) : block_(capacity_bytes) {}

    // n elements of T, 64-byte aligned, zeroed on first use of the arena. Throws Error when full.
    template <class T>
    T* alloc(int64_t n) {
        return static_cast<T*>(alloc_bytes(static_cast<size_t>(n) * sizeof(T)));
    }
    void* alloc_bytes(size_t bytes);

    // Ready for a new plan of `bytes`, carved from the start: the same memory where it is large
    // enough (a smaller batch), else a fresh block.
    void replan(size_t bytes) {
        if (capacity() < bytes) {
            *this = Arena(bytes);
        } else {
            reset(0);
        }
    }

    size_t mark() const { return used_; }
    void reset(size_t mark) { used_ = mark; }
    size_t used() const { return used_; }
    size_t capacity() const { return block_.size(); }

    // Bytes an arena needs to hold allocations of these sizes, with alignment padding.
    static size_t bytes_for(size_t bytes) {
        return static_cast<size_t>(round_up(static_cast<int64_t>(bytes), kAlignment));
    }

private:
    AlignedBuffer<std::byte> block_;
    size_t used_ = 0;
};

}  // namespace lmforge
