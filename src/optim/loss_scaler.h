// Dynamic loss scaling for fp16 mixed precision, with the usual semantics (Micikevicius et al.
// 2018; PyTorch's GradScaler): the loss's gradients are multiplied by the scale so that small
// ones survive fp16's range, and divided by it again before clipping and AdamW. A step whose
// gradients hold an inf or NaN (an fp16 overflow) is skipped and the scale halved; after
// `growth_interval` clean steps in a row it doubles. Checkpoints keep all three numbers, so a
// resumed run scales and skips exactly as an uninterrupted one.
#pragma once

#include <cstdint>

namespace lmforge {

struct LossScaler {
    double scale = 65536.0;        // 2^16
    int64_t clean_steps = 0;       // since the last change
    int64_t skipped_steps = 0;     // over the run
    int64_t growth_interval = 2000;

    // After a step: its gradients were finite (it was taken) or not (skipped). Returns
    // whether the step counts as taken.
    bool after_step(bool finite) {
        if (!finite) {
            scale *= 0.5;
            clean_steps = 0;
            skipped_steps++;
            return false;
        }
        if (++clean_steps == growth_interval) {
            scale *= 2.0;
            clean_steps = 0;
        }
        return true;
    }
};

}  // namespace lmforge
