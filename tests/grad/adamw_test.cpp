// AdamW and gradient clipping: kernel against the textbook twin, closed forms, and the
// optimizer's thread partition across tensors with and without weight decay.
#include "kernels/adamw.h"

#include "kernels/bf16.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>

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

// bf16 moments: the rounding, the kernel against its twin, why the rounding is stochastic,
// and results that do not depend on how the buffer is split.

TEST(StochasticRounding, AveragesExactlyToTheValueOverAllNoise) {
    for (const float x : {1.0f + 0x1p-10f, -3.14159f, 1e-20f, 0.75f + 0x1p-12f, 1.999f}) {
        const bf16 below = static_cast<bf16>(std::bit_cast<uint32_t>(x) >> 16);
        double sum = 0;
        for (uint32_t noise = 0; noise < 65536; noise++) {
            const bf16 y = to_bf16_stochastic(x, noise);
            ASSERT_TRUE(y == below || y == below + 1) << x;  // one of the two neighbours
            sum += from_bf16(y);  // exact: 8 significant bits, 2^16 terms
        }
        EXPECT_EQ(sum / 65536, static_cast<double>(x));
    }
    EXPECT_TRUE(std::isnan(from_bf16(to_bf16_stochastic(std::nanf(""), 0xFFFF))));
}

TEST(StochasticRounding, TheElementHashGivesUniformBitsInBothHalves) {
    // x lies an eighth of the way from 1 to the next bf16: it must round up 1/8 of the time.
    const float x = 1.0f + 0x1p-10f;
    const uint32_t key = rounding_step_key(7);
    const int n = 1 << 16;
    int up_low = 0, up_high = 0;
    for (int i = 0; i < n; i++) {
        const uint32_t noise = rounding_noise(static_cast<uint32_t>(i), key);
        up_low += to_bf16_stochastic(x, noise) != to_bf16(1.0f);
        up_high += to_bf16_stochastic(x, noise >> 16) != to_bf16(1.0f);
    }
    const double sd = std::sqrt(n * 0.125 * 0.875);  // binomial: 85
    EXPECT_NEAR(up_low, n / 8, 5 * sd);
    EXPECT_NEAR(up_high, n / 8, 5 * sd);
    EXPECT_NE(rounding_step_key(1), rounding_step_key(2));
}

TEST(AdamWTwin, Bf16MomentsKernelMatchesTwin) {
    for (const int64_t first : {0, 12345}) {
        const int64_t n = 1000;
        auto p = random_vector(n, 1), p_r = p;
        std::vector<bf16> m(n), v(n), m_r(n), v_r(n);
        for (int64_t step = 1; step <= 5; step++) {
            const auto g = random_vector(n, 10 + step);
            const kernels::AdamWHyper h{.lr = 1e-2f, .weight_decay = 0.1f, .step = step};
            kernels::adamw_update(p.data(), m.data(), v.data(), g.data(), n, h, first);
            kernels::ref::adamw_update_bf16_moments(p_r.data(), m_r.data(), v_r.data(), g.data(), n, 1e-2, 0.9, 0.95,
                                                    1e-8, 0.1, step, first);
        }
        EXPECT_TRUE(close(p, p_r, 1e-4, 1e-5)) << "first index " << first;
        // float against double may fall either side of a rounding threshold now and then:
        // one bf16 step (2^-7 relative) apart at most, and rarely.
        int differ = 0;
        for (int64_t i = 0; i < n; i++) {
            for (const auto& [a, b] : {std::pair{m[i], m_r[i]}, std::pair{v[i], v_r[i]}}) {
                EXPECT_NEAR(from_bf16(a), from_bf16(b), 0x1p-7 * std::abs(from_bf16(b))) << i;
                differ += a != b;
            }
        }
        EXPECT_LE(differ, n / 100);
    }
}

TEST(AdamW, Bf16MomentsKeepUpWithFp32OnesWhereRoundingToNearestStalls) {
    // β2 = 0.999 and a steady gradient of 1: v climbs toward 1 by 0.1% of the gap per step.
    // Once v passes 1/4, that is less than half a bf16 step, and rounding to nearest would
    // keep v there forever; stochastic rounding keeps the average on the fp32 path.
    const int64_t n = 4096, steps = 3000;
    std::vector<float> p(n), g(n, 1.0f);
    std::vector<bf16> m(n), v(n);
    float nearest = 0.0f;  // one moment, rounded to nearest each step
    for (int64_t step = 1; step <= steps; step++) {
        kernels::adamw_update(p.data(), m.data(), v.data(), g.data(), n,
                              {.lr = 1e-6f, .beta2 = 0.999f, .step = step}, 0);
        nearest = from_bf16(to_bf16(0.999f * nearest + 0.001f));
    }
    const double exact = 1.0 - std::pow(0.999, steps);  // 0.95
    // The premise, by hand: one v rounded to nearest each step stalls near 1/4.
    double mean = 0;
    for (const bf16 x : v) mean += from_bf16(x) / n;
    EXPECT_NEAR(mean, exact, 0.005 * exact);
    EXPECT_LT(nearest, 0.3);
}

TEST(AdamW, Bf16MomentsDoNotDependOnHowTheBufferIsSplit) {
    // ZeRO-1 gives each rank a range; threads split each range again. Rounding draws its
    // bits from the element's index in the whole buffer, so every split gives the same step.
    ParamLayout layout;
    layout.add("w", {30, 50});
    layout.add("b", {77});
    layout.add("w2", {40, 9});
    const AdamWConfig cfg{.moments = MomentPrecision::BF16};
    AdamW whole(layout, cfg), left(layout, cfg, 0, 1000), right(layout, cfg, 1000);
    auto p_whole = random_vector(layout.total(), 1), p_split = p_whole;
    for (int step = 0; step < 3; step++) {
        const auto g = random_vector(layout.total(), 20 + step);
        whole.step(p_whole.data(), g.data(), 0.01f);
        left.step(p_split.data(), g.data(), 0.01f);
        right.step(p_split.data() + 1000, g.data() + 1000, 0.01f);
    }
    EXPECT_EQ(p_whole, p_split);
    for (const auto moment : {&MomentSpans::m_bf16, &MomentSpans::v_bf16}) {
        const auto all = whole.moments().*moment, lo = left.moments().*moment, hi = right.moments().*moment;
        EXPECT_TRUE(std::equal(lo.begin(), lo.end(), all.begin()));
        EXPECT_TRUE(std::equal(hi.begin(), hi.end(), all.begin() + 1000));
    }
    EXPECT_EQ(whole.moment_bytes(), 2 * sizeof(bf16) * static_cast<size_t>(layout.total()));
}

TEST(AdamW, Bf16GradientsGiveWhatTheirFp32ValuesGive) {
    // Gradients kept in bf16 are widened as read: the step is the fp32 kernel's on those values,
    // to the bit, with fp32 and bf16 moments, through the optimizer's split across tensors.
    ParamLayout layout;
    layout.add("w", {30, 50});
    layout.add("b", {77});
    for (const MomentPrecision moments : {MomentPrecision::F32, MomentPrecision::BF16}) {
        AdamW from_bf16_grads(layout, {.moments = moments}), from_fp32_grads(layout, {.moments = moments});
        auto p = random_vector(layout.total(), 1), p_fp32 = p;
        std::vector<bf16> mirror(layout.total()), mirror_fp32(layout.total());
        for (int step = 0; step < 3; step++) {
            const auto g = random_vector(layout.total(), 20 + step);
            std::vector<bf16> g_h(g.size());
            std::vector<float> g_wide(g.size());
            for (size_t i = 0; i < g.size(); i++) {
                g_h[i] = to_bf16(g[i]);
                g_wide[i] = from_bf16(g_h[i]);
            }
            from_bf16_grads.step(p.data(), g_h.data(), 0.01f, 0.5f, mirror.data());
            from_fp32_grads.step(p_fp32.data(), g_wide.data(), 0.01f, 0.5f, mirror_fp32.data());
        }
        EXPECT_EQ(p, p_fp32);
        EXPECT_EQ(mirror, mirror_fp32);
    }
}

TEST(GradClip, SumOfSquaresOfBf16IsThatOfTheirFp32Values) {
    for (const int64_t n : {1, 257, 100003}) {
        const auto x = random_vector(n, 2);
        std::vector<bf16> x_h(n);
        std::vector<float> wide(n);
        for (int64_t i = 0; i < n; i++) {
            x_h[i] = to_bf16(x[i]);
            wide[i] = from_bf16(x_h[i]);
        }
        // Equal up to the order of the float runs' sums, which the two loops may split apart differently.
        const double want = kernels::sum_of_squares(wide.data(), n);
        EXPECT_NEAR(kernels::sum_of_squares(x_h.data(), n), want, 1e-6 * want) << n;
        EXPECT_NEAR(grad_norm(x_h.data(), n), std::sqrt(want), 1e-6 * std::sqrt(want)) << n;
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
