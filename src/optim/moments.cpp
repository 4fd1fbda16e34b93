#include "optim/moments.h"

#include <fmt/format.h>


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

}  // namespace lmforge
