#include "model/model.h"

#include "kernels/bf16.h"

namespace lmforge {

Model::Model(ParamLayout layout, Precision precision)
    : layout_(std::move(layout)), precision_(precision), params_(layout_.total()), grads_(layout_.total()) {
    if (precision_ == Precision::Bf16) params_h_ = AlignedBuffer<uint16_t>(layout_.total());
}

void Model::refresh_half_weights() {
    if (precision_ == Precision::Bf16 && half_stale_) {
        kernels::to_bf16(params_h_.data(), params_.data(), static_cast<int64_t>(params_.size()));
        half_stale_ = false;
    }
}

kernels::WeightGrad Model::begin_backward() {
    if (!grads_stale_) return kernels::WeightGrad::Accumulate;
    for (std::span<float> g : accumulated_grads_) zero(g.data(), static_cast<int64_t>(g.size()));
    grads_stale_ = false;
    return kernels::WeightGrad::Overwrite;
}

}  // namespace lmforge
