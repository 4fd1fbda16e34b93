// Adam's two moments over a range of the flat parameter buffer, kept in fp32 or, to halve
// their memory (8 bytes per parameter become 4), in bfloat16 with stochastic rounding
// (kernels/adamw.h): for a model the size of GPT-2 124M that is 500 MB less.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/aligned_buffer.h"
#include "core/bf16.h"

namespace lmforge {

enum class MomentPrecision { F32, BF16 };

// "fp32" or "bf16"; InputError naming `what` otherwise.
MomentPrecision parse_moment_precision(const std::string& name, const std::string& what);
const char* moment_precision_name(MomentPrecision p);

// A view of both moments in one precision; the pair of the other precision is empty.
struct MomentSpans {
    MomentPrecision precision = MomentPrecision::F32;
    std::span<float> m, v;
    std::span<bf16> m_bf16, v_bf16;

    size_t size() const { return precision == MomentPrecision::F32 ? m.size() : m_bf16.size(); }
    // The elements [begin, begin + n) of each.
    MomentSpans subspan(size_t begin, size_t n) const;
};

// Owns both moments of n elements, zeroed.
class Moments {
public:
    Moments() = default;
    Moments(MomentPrecision precision, size_t n);

    MomentSpans spans();
    size_t bytes() const { return 2 * size_ * (precision_ == MomentPrecision::F32 ? sizeof(float) : sizeof(bf16)); }

private:
    MomentPrecision precision_ = MomentPrecision::F32;
    size_t size_ = 0;
    AlignedBuffer<float> m_, v_;
    AlignedBuffer<bf16> m_bf16_, v_bf16_;
};

// AdamW's moments and its step count as a checkpoint holds them: over the whole layout,
// whether one process or many (ZeRO-1 shards) held them. A load may fill a part of the layout
// only, the elements [first, first + size): a ZeRO-1 rank reads just its shard.
struct OptimizerMoments {
    MomentSpans moments;
    int64_t steps = 0;
    int64_t first = 0;  // the layout element moments[0] stands for
};

}  // namespace lmforge
