// The sequence-classification head: finite differences on the twin; the kernel against it,
// with a bias (BERT's head) and without (GPT-2's).
#include "kernels/classifier.h"

#include <limits>

#include "gradcheck.h"
#include "kernels/ref/classifier.h"

namespace lmforge::test {
namespace {

TEST(ClassifierGrad, FiniteDifferences) {
    const int64_t B = 3, C = 5, L = 4;
    auto h = random_vector<double>(B * C, 1, 2.0f), score = random_vector<double>(L * C, 2, 2.0f),
         bias = random_vector<double>(L, 5);
    const std::vector<int32_t> labels = {0, 3, 1};
    const double dloss = 0.6;
    std::vector<double> logits(B * L), losses(B), dh(B * C), dscore(L * C), dbias(L);
    kernels::ref::classifier(logits.data(), losses.data(), dh.data(), dscore.data(), dbias.data(), h.data(),
                             score.data(), bias.data(), labels.data(), dloss, B, C, L);
    const auto loss = [&] {
        std::vector<double> lg(B * L), ls(B), gh(B * C), gs(L * C);
        kernels::ref::classifier(lg.data(), ls.data(), gh.data(), gs.data(), static_cast<double*>(nullptr), h.data(),
                                 score.data(), bias.data(), labels.data(), dloss, B, C, L);
        double total = 0;
        for (double v : ls) total += dloss * v;
        return total;
    };
    expect_matches_finite_differences({{"h", &h, &dh}, {"score", &score, &dscore}, {"bias", &bias, &dbias}}, loss);
}

TEST(ClassifierTwin, KernelMatchesTwin) {
    struct Shape { int64_t B, C, L; };
    for (const bool with_bias : {false, true}) {
        for (const Shape s : {Shape{1, 1, 2}, Shape{5, 48, 2}, Shape{8, 100, 7}}) {
            const auto h = random_vector(s.B * s.C, 3, 2.0f), score = random_vector(s.L * s.C, 4),
                       bias_values = random_vector(s.L, 6);
            const float* bias = with_bias ? bias_values.data() : nullptr;
            const auto bias_r = convert<double>(bias_values);
            std::vector<int32_t> labels(s.B);
            for (int64_t b = 0; b < s.B; b++) labels[b] = static_cast<int32_t>((b * 5 + 1) % s.L);
            std::vector<double> logits_r(s.B * s.L), losses_r(s.B), dh_r(s.B * s.C), dscore_r(s.L * s.C),
                dbias_r(s.L);
            kernels::ref::classifier(logits_r.data(), losses_r.data(), dh_r.data(), dscore_r.data(), dbias_r.data(),
                                     convert<double>(h).data(), convert<double>(score).data(),
                                     with_bias ? bias_r.data() : nullptr, labels.data(), 0.5, s.B, s.C, s.L);
            std::vector<float> logits(s.B * s.L), losses(s.B);
            kernels::classifier_forward(logits.data(), losses.data(), h.data(), score.data(), bias, labels.data(), s.B,
                                        s.C, s.L);
            EXPECT_TRUE(close(logits, logits_r, kTwinRtol, kTwinAtol)) << s.L << " bias " << with_bias;
            EXPECT_TRUE(close(losses, losses_r, kTwinRtol, kTwinAtol)) << s.L << " bias " << with_bias;
            // dh must be written, dscore and dbias overwritten.
            std::vector<float> dh(s.B * s.C, std::numeric_limits<float>::quiet_NaN()), dscore(s.L * s.C, 1e9f),
                dbias(s.L, 1e9f);
            float* dbias_arg = with_bias ? dbias.data() : nullptr;
            kernels::classifier_backward(dh.data(), dscore.data(), dbias_arg, false, logits.data(), h.data(),
                                         score.data(), labels.data(), 0.5f, s.B, s.C, s.L);
            EXPECT_TRUE(close(dh, dh_r, kTwinRtol, kTwinAtol)) << s.L << " bias " << with_bias;
            EXPECT_TRUE(close(dscore, dscore_r, kTwinRtol, kTwinAtol)) << s.L << " bias " << with_bias;
            if (with_bias) {
                EXPECT_TRUE(close(dbias, dbias_r, kTwinRtol, kTwinAtol)) << s.L;
            }
            // Accumulating adds the same again.
            kernels::classifier_backward(dh.data(), dscore.data(), dbias_arg, true, logits.data(), h.data(),
                                         score.data(), labels.data(), 0.5f, s.B, s.C, s.L);
            for (auto& v : dscore_r) v *= 2;
            for (auto& v : dbias_r) v *= 2;
            EXPECT_TRUE(close(dscore, dscore_r, kTwinRtol, kTwinAtol)) << s.L << " bias " << with_bias;
            if (with_bias) {
                EXPECT_TRUE(close(dbias, dbias_r, kTwinRtol, kTwinAtol)) << s.L;
            }
        }
    }
}

}  // namespace
}  // namespace lmforge::test
