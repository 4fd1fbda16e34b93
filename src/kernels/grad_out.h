// Where a kernel writes a weight's gradient: fp32, or bfloat16 where the gradients are kept in
// bf16 (train.grads = "bf16"). Into bf16 a kernel takes its fp32 sums a block of rows at a time
// in `sums` (sums_floats of room) and rounds each once, with the gradient's own value when
// accumulating. Made from a float* (or null: no gradient wanted), so fp32 callers pass one as
// ever.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace lmforge::kernels {

struct GradOut {
    float* f32 = nullptr;
    uint16_t* bf16 = nullptr;
    float* sums = nullptr;
    int64_t sums_floats = 0;

    GradOut() = default;
    GradOut(std::nullptr_t) {}
    GradOut(float* p) : f32(p) {}
    GradOut(uint16_t* p, float* sums, int64_t sums_floats) : bf16(p), sums(sums), sums_floats(sums_floats) {}

    explicit operator bool() const { return f32 != nullptr || bf16 != nullptr; }
    // Its first n elements set to zero, in whichever precision it is.
    void zero(int64_t n) const {
        if (f32 != nullptr) std::fill_n(f32, n, 0.0f);
        if (bf16 != nullptr) std::fill_n(bf16, n, uint16_t{0});
    }
    // The gradient `offset` elements on.
    GradOut operator+(int64_t offset) const {
        GradOut g = *this;
        if (f32 != nullptr) g.f32 = f32 + offset;
        if (bf16 != nullptr) g.bf16 = bf16 + offset;
        return g;
    }
};

}  // namespace lmforge::kernels
