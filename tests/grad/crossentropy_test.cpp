// Softmax + cross-entropy with vocabulary padding and ignored targets: finite differences on
// the twin (the kernel fuses it with the LM head: lm_head_loss_test.cpp).
#include "kernels/crossentropy.h"

#include "gradcheck.h"
#include "kernels/ref/crossentropy.h"

namespace lmforge::test {
namespace {

TEST(CrossEntropyGrad, FiniteDifferences) {
    const int64_t N = 4, V = 5, Vp = 8;  // three padding columns
    auto logits = random_vector<double>(N * Vp, 1, 2.0f);
    const std::vector<int32_t> targets = {0, 4, kernels::kIgnoreIndex, 2};
    const double dloss = 0.7;
    std::vector<double> losses(N), lse(N), dlogits(N * Vp);
    kernels::ref::crossentropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N,
                                       V, Vp);
    kernels::ref::crossentropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(),
                                        dloss, N, V, Vp);
    EXPECT_EQ(losses[2], 0.0);
    const auto loss = [&] {
        std::vector<double> l(N), s(N);
        kernels::ref::crossentropy_forward(l.data(), s.data(), logits.data(), targets.data(), N, V, Vp);
        double total = 0;
        for (double x : l) total += dloss * x;
        return total;
    };
    // The padding columns' numeric gradient is 0: they never reach the loss.
    expect_matches_finite_differences({{"logits", &logits, &dlogits}}, loss);
}

}  // namespace
}  // namespace lmforge::test
