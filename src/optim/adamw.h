// AdamW on flat buffers: moments m and v share the parameter layout; weight decay applies to
// the parameters the layout marks (matrices), never to biases or LayerNorm.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/aligned_buffer.h"
#include "model/param_layout.h"

namespace lmforge {

struct AdamWConfig {
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float weight_decay = 0.1f;
};

class AdamW {
public:
    AdamW(const ParamLayout& layout, const AdamWConfig& cfg);

    // One step at learning rate lr: params updated from grads (both in the layout), each
    // gradient first multiplied by grad_scale (the clip factor, so that clipping needs no
    // pass of its own over the gradients).
    void step(float* params, const float* grads, float lr, float grad_scale = 1.0f);

    int64_t steps_taken() const { return step_; }
    void set_steps_taken(int64_t n) { step_ = n; }
    std::span<float> m() { return m_.span(); }
    std::span<float> v() { return v_.span(); }
    std::span<const float> m() const { return m_.span(); }
    std::span<const float> v() const { return v_.span(); }
    const AdamWConfig& config() const { return cfg_; }

private:
    struct Segment {
        int64_t offset, length;
        bool decay;
    };
    AdamWConfig cfg_;
    std::vector<Segment> segments_;  // the layout's tensors, in buffer order
    int64_t total_ = 0;              // floats in all segments together
    AlignedBuffer<float> m_, v_;
    int64_t step_ = 0;
};

}  // namespace lmforge
