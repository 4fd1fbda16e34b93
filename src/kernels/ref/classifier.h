// Scalar twin of kernels/classifier.h: the logits by definition, the loss through the
// cross-entropy twin, the gradients by head_backward and head_bias_backward (shared with the
// LM head's twin).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ref/crossentropy.h"

namespace lmforge::kernels::ref {

// Writes logits, losses, dh, dscore and dbias (=) for loss = dloss · Σ losses. bias and dbias
// may be null.
template <class T_>
void classifier(T_* logits, T_* losses, T_* dh, T_* dscore, T_* dbias, const T_* h, const T_* score, const T_* bias,
                const int32_t* labels, T_ dloss, int64_t B, int64_t C, int64_t L) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < L; j++) {
            T_ acc = bias != nullptr ? bias[j] : T_(0);
            for (int64_t c = 0; c < C; c++) acc += h[b * C + c] * score[j * C + c];
            logits[b * L + j] = acc;
        }
    std::vector<T_> lse(B), dlogits(B * L);
    crossentropy_forward(losses, lse.data(), logits, labels, B, L, L);
    crossentropy_backward(dlogits.data(), logits, lse.data(), labels, dloss, B, L, L);
    head_backward(dh, dscore, dlogits.data(), h, score, B, C, L);
    if (dbias != nullptr) head_bias_backward(dbias, dlogits.data(), B, L, L);
}

}  // namespace lmforge::kernels::ref
