// AdamW on flat buffers: moments m and v share the parameter layout; weight decay applies to
// the parameters the layout marks (matrices), never to biases or LayerNorm. An optimizer may
// own only a range [begin, end) of the flat buffer (ZeRO-1: each rank its shard), holding
// moments for that range alone. The moments are fp32, or bf16 to halve their memory
// (optim/moments.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/param_layout.h"
#include "optim/moments.h"

namespace lmforge {

struct AdamWConfig {
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float weight_decay = 0.1f;
    MomentPrecision moments = MomentPrecision::F32;
};

class AdamW {
public:
    // Owns [begin, end) of the layout's flat buffer; end -1: to its end.
    AdamW(const ParamLayout& layout, const AdamWConfig& cfg, int64_t begin = 0, int64_t end = -1);

    // One step at learning rate lr. params and grads point at the start of the owned range
    // (params + begin(), and grads + begin() or a buffer of just the range). Each gradient
    // is first multiplied by grad_scale (the clip factor, so that clipping needs no pass of
    // its own over the gradients).
    // mirror, if not null, points like params into a bfloat16 copy of the parameters, which
    // the step refreshes in the same pass (mixed precision).
    void step(float* params, const float* grads, float lr, float grad_scale = 1.0f,
              uint16_t* mirror = nullptr);
    // The same with the gradients kept in bfloat16 (train.grads = "bf16").
    void step(float* params, const uint16_t* grads, float lr, float grad_scale = 1.0f,
              uint16_t* mirror = nullptr);

    int64_t begin() const { return begin_; }
    int64_t end() const { return end_; }

    int64_t steps_taken() const { return step_; }
    void set_steps_taken(int64_t n) { step_ = n; }
    // The moments of the owned range.
    MomentSpans moments() { return moments_.spans(); }
    size_t moment_bytes() const { return moments_.bytes(); }
    const AdamWConfig& config() const { return cfg_; }

private:
    template <class Grad>
    void step_with(float* params, const Grad* grads, float lr, float grad_scale, uint16_t* mirror);

    struct Segment {
        int64_t offset, length;  // offset relative to begin_
        bool decay;
    };
    AdamWConfig cfg_;
    int64_t begin_, end_;
    std::vector<Segment> segments_;  // the layout's tensors within the range, in buffer order
    int64_t total_ = 0;              // floats in all segments together
    Moments moments_;
    int64_t step_ = 0;
};

}  // namespace lmforge
