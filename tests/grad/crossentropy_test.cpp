// Fused softmax + cross-entropy with vocabulary padding and ignored targets.
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

TEST(CrossEntropyTwin, KernelMatchesTwinOnRemainderShapes) {
    struct Shape { int64_t N, V, Vp; };
    for (const Shape s : {Shape{1, 1, 64}, Shape{7, 65, 128}, Shape{5, 101, 128}, Shape{3, 1000, 1024}}) {
        const int64_t N = s.N, V = s.V, Vp = s.Vp;
        auto logits = random_vector(N * Vp, 2, 3.0f);
        // Padding columns hold garbage that must be ignored.
        for (int64_t n = 0; n < N; n++)
            for (int64_t v = V; v < Vp; v++) logits[n * Vp + v] = 1e3f;
        std::vector<int32_t> targets(N);
        Rng rng(3);
        for (auto& t : targets) t = static_cast<int32_t>(rng.below(V));
        if (N > 2) targets[1] = kernels::kIgnoreIndex;
        std::vector<float> losses(N), lse(N), dlogits(N * Vp);
        std::vector<double> losses_r(N), lse_r(N), dlogits_r(N * Vp);
        const auto logits_r = convert<double>(logits);
        kernels::crossentropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V, Vp);
        kernels::ref::crossentropy_forward(losses_r.data(), lse_r.data(), logits_r.data(),
                                           targets.data(), N, V, Vp);
        EXPECT_TRUE(close(losses, losses_r, kTwinRtol, kTwinAtol)) << "V=" << V;
        kernels::crossentropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(),
                                       0.25f, N, V, Vp);
        kernels::ref::crossentropy_backward(dlogits_r.data(), logits_r.data(), lse_r.data(),
                                            targets.data(), 0.25, N, V, Vp);
        EXPECT_TRUE(close(dlogits, dlogits_r, kTwinRtol, kTwinAtol)) << "V=" << V;
        // In place, as the model uses it: dlogits written over the logits.
        auto inplace = logits;
        kernels::crossentropy_backward(inplace.data(), inplace.data(), lse.data(), targets.data(),
                                       0.25f, N, V, Vp);
        EXPECT_TRUE(close(inplace, dlogits, 0.0, 0.0));
    }
}

}  // namespace
}  // namespace lmforge::test
