#include "optim/moments.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace lmforge {

MomentPrecision parse_moment_precision(const std::string& name, const std::string& what) {
    if (name == "fp32") return MomentPrecision::F32;
    if (name == "bf16") return MomentPrecision::BF16;
    throw InputError(fmt::format("{} = '{}': unknown moment precision", what, name),
                     "use fp32, or bf16 to halve the optimizer's memory");
}

const char* moment_precision_name(MomentPrecision p) { return p == MomentPrecision::F32 ? "fp32" : "bf16"; }

MomentSpans MomentSpans::subspan(size_t begin, size_t n) const {
    if (precision == MomentPrecision::F32) return {precision, m.subspan(begin, n), v.subspan(begin, n), {}, {}};
    return {precision, {}, {}, m_bf16.subspan(begin, n), v_bf16.subspan(begin, n)};
}

Moments::Moments(MomentPrecision precision, size_t n) : precision_(precision), size_(n) {
    if (precision == MomentPrecision::F32) {
        m_ = AlignedBuffer<float>(n);
        v_ = AlignedBuffer<float>(n);
    } else {
        m_bf16_ = AlignedBuffer<bf16>(n);
        v_bf16_ = AlignedBuffer<bf16>(n);
    }
}

MomentSpans Moments::spans() { return {precision_, m_.span(), v_.span(), m_bf16_.span(), v_bf16_.span()}; }

namespace {

void convert(std::span<const float> src, std::span<float> dst) { std::copy(src.begin(), src.end(), dst.begin()); }
void convert(std::span<const bf16> src, std::span<bf16> dst) { std::copy(src.begin(), src.end(), dst.begin()); }
void convert(std::span<const float> src, std::span<bf16> dst) { kernels::to_bf16(dst.data(), src.data(), static_cast<int64_t>(src.size())); }
void convert(std::span<const bf16> src, std::span<float> dst) {
    std::transform(src.begin(), src.end(), dst.begin(), from_bf16);
}

template <class Dst>
void copy_into(const MomentSpans& src, std::span<Dst> m, std::span<Dst> v) {
    if (src.precision == MomentPrecision::F32) {
        convert(std::span<const float>(src.m), m);
        convert(std::span<const float>(src.v), v);
    } else {
        convert(std::span<const bf16>(src.m_bf16), m);
        convert(std::span<const bf16>(src.v_bf16), v);
    }
}

}  // namespace

void copy_moments(const MomentSpans& src, const MomentSpans& dst) {
    if (src.size() != dst.size()) throw Error(fmt::format("copy_moments: {} elements into {}", src.size(), dst.size()));
    if (dst.precision == MomentPrecision::F32) {
        copy_into(src, dst.m, dst.v);
    } else {
        copy_into(src, dst.m_bf16, dst.v_bf16);
    }
}

}  // namespace lmforge
