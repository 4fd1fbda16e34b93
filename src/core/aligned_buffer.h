// An owned, zero-initialised, 64-byte aligned array of trivially copyable T: the storage
// behind parameters, gradients, optimizer moments and activation arenas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

namespace lmforge {

inline constexpr size_t kAlignment = 64;  // one cache line; the widest SIMD load (AVX-512)

// Rounds n up to a multiple of `multiple` (a power of two or not).
constexpr int64_t round_up(int64_t n, int64_t multiple) {
    return (n + multiple - 1) / multiple * multiple;
}

void* aligned_zeroed_alloc(size_t bytes);  // throws Error naming the size when memory runs out
void aligned_free(void* p, size_t bytes);  // bytes as allocated

template <class T>
class AlignedBuffer {
    static_assert(std::is_trivially_copyable_v<T>);

public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(size_t n)
        : data_(static_cast<T*>(aligned_zeroed_alloc(n * sizeof(T)))), size_(n) {}
    ~AlignedBuffer() { aligned_free(data_, size_ * sizeof(T)); }
    AlignedBuffer(AlignedBuffer&& o) noexcept
        : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
    AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
        std::swap(data_, o.data_);
        std::swap(size_, o.size_);
        return *this;
    }
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;

    T* data() { return data_; }
    const T* data() const { return data_; }
    size_t size() const { return size_; }
    T& operator[](size_t i) { return data_[i]; }
    const T& operator[](size_t i) const { return data_[i]; }
    std::span<T> span() { return {data_, size_}; }
    std::span<const T> span() const { return {data_, size_}; }

private:
    T* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace lmforge
