// Scalar twin of kernels/lm_head_loss.h's soft targets (distillation), unfused and textbook:
// the full logits, the hard cross-entropy, the KL divergence to the teacher at temperature T
// written from its definition, and the gradient of their weighted sum.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/ref/crossentropy.h"

namespace lmforge::kernels::ref {

// log softmax(z / T) of one row of V logits.
template <class T_>
std::vector<T_> log_softmax_at(const T_* z, int64_t V, T_ T) {
    T_ m = z[0] / T;
    for (int64_t v = 1; v < V; v++) m = std::max(m, z[v] / T);
    T_ sum = 0;
    for (int64_t v = 0; v < V; v++) sum += std::exp(z[v] / T - m);
    std::vector<T_> out(V);
    for (int64_t v = 0; v < V; v++) out[v] = z[v] / T - m - std::log(sum);
    return out;
}

// x (N, C), wte (V, C) (no padding, no bias), teacher_logp (N, V). losses (N) the hard CE,
// kl (N) T² · KL(p ‖ softmax(z / T)); dx, dwte written (=) for loss = dloss · Σ_n
// (task_weight · losses[n] + kl_weight · kl[n]). Every target is counted.
template <class T_>
void lm_head_distill(T_* losses, T_* kl, T_* dx, T_* dwte, const T_* x, const T_* wte, const int32_t* targets,
                     const T_* teacher_logp, T_ temperature, T_ task_weight, T_ kl_weight, T_ dloss, int64_t N,
                     int64_t C, int64_t V) {
    std::vector<T_> logits(N * V), dlogits(N * V);
    for (int64_t n = 0; n < N; n++)
        for (int64_t v = 0; v < V; v++) {
            T_ acc = 0;
            for (int64_t c = 0; c < C; c++) acc += x[n * C + c] * wte[v * C + c];
            logits[n * V + v] = acc;
        }
    for (int64_t n = 0; n < N; n++) {
        const T_* z = logits.data() + n * V;
        const std::vector<T_> q_hard = log_softmax_at(z, V, T_(1)), q_soft = log_softmax_at(z, V, temperature);
        const T_* logp = teacher_logp + n * V;
        losses[n] = -q_hard[targets[n]];
        T_ divergence = 0;
        for (int64_t v = 0; v < V; v++) divergence += std::exp(logp[v]) * (logp[v] - q_soft[v]);
        kl[n] = temperature * temperature * divergence;
        for (int64_t v = 0; v < V; v++) {
            const T_ hard = std::exp(q_hard[v]) - (v == targets[n] ? T_(1) : T_(0));
            const T_ soft = temperature * (std::exp(q_soft[v]) - std::exp(logp[v]));
            dlogits[n * V + v] = dloss * (task_weight * hard + kl_weight * soft);
        }
    }
    head_backward(dx, dwte, dlogits.data(), x, wte, N, C, V);
}

}  // namespace lmforge::kernels::ref
