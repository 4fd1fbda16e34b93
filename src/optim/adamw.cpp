#include "optim/adamw.h"

#include <omp.h>

#include <algorithm>

#include "backend/threads.h"
#include "kernels/adamw.h"

namespace lmforge {

AdamW::AdamW(const ParamLayout& layout, const AdamWConfig& cfg, int64_t begin, int64_t end)
    : cfg_(cfg), begin_(begin), end_(end < 0 ? layout.total() : end), moments_(cfg.moments, static_cast<size_t>(end_ - begin_)) {
    for (const ParamSpec& s : layout.specs()) {
        const int64_t lo = std::max(begin_, s.offset), hi = std::min(end_, s.offset + s.reserved);
        if (lo < hi) {
            segments_.push_back({lo - begin_, hi - lo, s.decay});
            total_ += hi - lo;
        }
    }
}

void AdamW::step(float* params, const float* grads, float lr, float grad_scale, uint16_t* mirror) {
    step_with(params, grads, lr, grad_scale, mirror);
}

void AdamW::step(float* params, const uint16_t* grads, float lr, float grad_scale, uint16_t* mirror) {
    step_with(params, grads, lr, grad_scale, mirror);
}

template <class Grad>
void AdamW::step_with(float* params, const Grad* grads, float lr, float grad_scale, uint16_t* mirror) {
    step_++;
    kernels::AdamWHyper h{.lr = lr, .beta1 = cfg_.beta1, .beta2 = cfg_.beta2, .eps = cfg_.eps,
                          .step = step_, .grad_scale = grad_scale};
    const MomentSpans moments = moments_.spans();
    // Each thread takes an equal share of all elements, crossing tensor boundaries, so a
    // thousand small bias vectors cost no more synchronisation than one matrix.
#pragma omp parallel
    {
        const auto [begin, end] =
            backend::thread_slice(total_, omp_get_thread_num(), omp_get_num_threads());
        int64_t seen = 0;  // elements of the segments before this one
        for (const Segment& s : segments_) {
            const int64_t lo = std::max<int64_t>(begin, seen);
            const int64_t hi = std::min<int64_t>(end, seen + s.length);
            if (lo < hi) {
                kernels::AdamWHyper hs = h;
                hs.weight_decay = s.decay ? cfg_.weight_decay : 0.0f;
                const int64_t at = s.offset + (lo - seen);
                uint16_t* mirror_at = mirror != nullptr ? mirror + at : nullptr;
                if (moments.precision == MomentPrecision::F32) {
                    kernels::adamw_update(params + at, moments.m.data() + at, moments.v.data() + at, grads + at,
                                          hi - lo, hs, mirror_at);
                } else {
                    kernels::adamw_update(params + at, moments.m_bf16.data() + at, moments.v_bf16.data() + at,
                                          grads + at, hi - lo, hs, begin_ + at, mirror_at);
                }
            }
            seen += s.length;
        }
    }
}

}  // namespace lmforge
