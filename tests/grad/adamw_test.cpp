// AdamW and gradient clipping: kernel against the textbook twin, closed forms, and the
// optimizer's thread partition across tensors with and without weight decay.
#include "kernels/adamw.h"

#include "kernels/bf16.h"

#include <cmath>

#include "gradcheck.h"
#include "kernels/grad_norm.h"
#include "kernels/ref/adamw.h"
#include "kernels/ref/grad_norm.h"
#include "model/param_layout.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"

namespace lmforge::test {
namespace {

TEST(AdamWTwin, KernelMatchesTwinOverSteps) {
    for (const int64_t n : {1, 17, 1000}) {
        auto p = random_vector(n, 1), m = std::vector<float>(n), v = std::vector<float>(n);
        auto p_r = convert<double>(p), m_r = std::vector<double>(n), v_r = std::vector<double>(n);
        for (int64_t step = 1; step <= 5; step++) {
            const auto g = random_vector(n, 10 + step);
            const kernels::AdamWHyper h{.lr = 1e-2f, .weight_decay = 0.1f, .step = step};
            kernels::adamw_update(p.data(), m.data(), v.data(), g.data(), n, h);
            kernels::ref::adamw_update(p_r.data(), m_r.data(), v_r.data(),
                                       convert<double>(g).data(), n, 1e-2, 0.9, 0.95, 1e-8, 0.1, step);
        }
        EXPECT_TRUE(close(p, p_r, 1e-5, 1e-6)) << "n=" << n;
        EXPECT_TRUE(close(m, m_r, 1e-5, 1e-7));
        EXPECT_TRUE(close(v, v_r, 1e-5, 1e-7));
    }
}

TEST(AdamW, FirstStepIsSignedLearningRateAfterDecay) {
    // Step 1 from zero moments: m̂ = g, v̂ = g², so the update is lr·g/(|g| + eps).
    std::vector<float> p = {1.0f, -2.0f}, m(2), v(2), g = {0.5f, -3.0f};
    kernels::adamw_update(p.data(), m.data(), v.data(), g.data(), 2,
                          {.lr = 0.1f, .weight_decay = 0.5f, .step = 1});
    EXPECT_NEAR(p[0], 1.0f * (1 - 0.05f) - 0.1f, 1e-6);
    EXPECT_NEAR(p[1], -2.0f * (1 - 0.05f) + 0.1f, 1e-6);
}

TEST(AdamW, DecaysMatricesOnlyAcrossThreadPartitions) {
    ParamLayout layout;
    layout.add("w", {3, 5});  // decayed
    layout.add("b", {7});     // not decayed
    layout.add("w2", {4, 9});
    EXPECT_TRUE(layout.find("w").decay);
    EXPECT_FALSE(layout.find("b").decay);
    AdamW opt(layout, AdamWConfig{.weight_decay = 0.5f});
    std::vector<float> params(layout.total(), 1.0f), grads(layout.total(), 0.0f);
    opt.step(params.data(), grads.data(), 0.1f);  // zero gradient: only decay moves weights
    for (const ParamSpec& s : layout.specs()) {
        for (int64_t i = 0; i < s.numel; i++) {
            EXPECT_FLOAT_EQ(params[s.offset + i], s.decay ? 0.95f : 1.0f) << s.name;
        }
    }
}

TEST(AdamW, RefreshesTheBf16CopyInTheSamePass) {
    // Mixed precision: the step writes each updated weight's bf16 rounding beside it, so the
    // next forward needs no conversion pass.
    ParamLayout layout;
    layout.add("w", {3, 50});
    layout.add("b", {7});
    AdamW opt(layout, AdamWConfig{});
    auto params = random_vector(layout.total(), 1);
    const auto grads = random_vector(layout.total(), 2);
    std::vector<bf16> mirror(layout.total(), 0xFFFF);
    for (int step = 0; step < 3; step++) opt.step(params.data(), grads.data(), 0.01f, 0.5f, mirror.data());
    for (const ParamSpec& s : layout.specs()) {
        for (int64_t i = 0; i < s.numel; i++) {
            ASSERT_EQ(mirror[s.offset + i], to_bf16(params[s.offset + i])) << s.name << " " << i;
        }
    }
}

TEST(GradClip, SumOfSquaresMatchesTwin) {
    for (const int64_t n : {1, 255, 257, 100003}) {
        const auto x = random_vector(n, 2);
        EXPECT_NEAR(kernels::sum_of_squares(x.data(), n), kernels::ref::sum_of_squares(x.data(), n),
                    1e-5 * n);
    }
}

TEST(GradClip, ScalesToMaxNormOnlyWhenAbove) {
    std::vector<float> g = {3.0f, 4.0f};  // norm 5
    EXPECT_NEAR(clip_grad_norm(g.data(), 2, 10.0), 5.0, 1e-9);
    EXPECT_FLOAT_EQ(g[0], 3.0f);  // below the limit: untouched
    EXPECT_NEAR(clip_grad_norm(g.data(), 2, 1.0), 5.0, 1e-9);
    EXPECT_NEAR(std::hypot(g[0], g[1]), 1.0, 1e-6);
    EXPECT_NEAR(g[0] / g[1], 0.75, 1e-6);  // direction kept
}

}  // namespace
}  // namespace lmforge::test
