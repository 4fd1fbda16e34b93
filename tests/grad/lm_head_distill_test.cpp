// Distillation's soft targets in the fused LM head (kernels/lm_head_loss.h, SoftTargets):
// finite differences on the scalar twin; the twin against PyTorch's kl_div and cross_entropy
// (tests/fixtures/distill_kl.safetensors, tools/make_distill_fixture.py); and the kernel against
// the twin in fp32 and bf16, in one pass and in the row blocks it takes where the chunked
// passes are the rule.
#include <limits>

#include "gradcheck.h"
#include "io/safetensors.h"
#include "kernels/bf16.h"
#include "kernels/cosine_distance.h"
#include "kernels/lm_head_loss.h"
#include "kernels/ref/cosine_distance.h"
#include "kernels/ref/lm_head_distill.h"
#include "kernels/soft_targets.h"

namespace lmforge::test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Fixture {
    SafetensorsReader file{std::string(LMFORGE_FIXTURES_DIR) + "/distill_kl.safetensors"};
    std::vector<float> x = file.read_f32("x"), wte = file.read_f32("wte"), logp = file.read_f32("teacher_logp");
    std::vector<int32_t> targets = file.read_i32("targets");
    std::vector<float> params = file.read_f32("params");  // temperature, task and kl weights, dloss
    int64_t N = file.info("x").shape[0], C = file.info("x").shape[1], V = file.info("wte").shape[0];
};

TEST(LmHeadDistillGrad, FiniteDifferencesOnTheTwin) {
    const int64_t N = 3, C = 4, V = 6;
    auto x = random_vector<double>(N * C, 1, 2.0f), wte = random_vector<double>(V * C, 2, 2.0f);
    const auto teacher = random_vector<double>(N * V, 3, 3.0f);
    const std::vector<int32_t> targets = {1, 5, 0};
    const double T = 2.5, hard = 0.4, soft = 0.9, dloss = 0.7;
    std::vector<double> logp;
    for (int64_t n = 0; n < N; n++) {
        const auto row = kernels::ref::log_softmax_at(teacher.data() + n * V, V, T);
        logp.insert(logp.end(), row.begin(), row.end());
    }
    std::vector<double> losses(N), kl(N), dx(N * C), dwte(V * C);
    kernels::ref::lm_head_distill(losses.data(), kl.data(), dx.data(), dwte.data(), x.data(), wte.data(),
                                  targets.data(), logp.data(), T, hard, soft, dloss, N, C, V);
    const auto loss = [&] {
        std::vector<double> l(N), k(N), gx(N * C), gw(V * C);
        kernels::ref::lm_head_distill(l.data(), k.data(), gx.data(), gw.data(), x.data(), wte.data(), targets.data(),
                                      logp.data(), T, hard, soft, dloss, N, C, V);
        double total = 0;
        for (int64_t n = 0; n < N; n++) total += dloss * (hard * l[n] + soft * k[n]);
        return total;
    };
    expect_matches_finite_differences({{"x", &x, &dx}, {"wte", &wte, &dwte}}, loss);
}

TEST(LmHeadDistillTwin, MatchesPyTorch) {
    const Fixture f;
    const auto& p = f.params;
    std::vector<double> losses(f.N), kl(f.N), dx(f.N * f.C), dwte(f.V * f.C);
    kernels::ref::lm_head_distill(losses.data(), kl.data(), dx.data(), dwte.data(), convert<double>(f.x).data(),
                                  convert<double>(f.wte).data(), f.targets.data(), convert<double>(f.logp).data(),
                                  double{p[0]}, double{p[1]}, double{p[2]}, double{p[3]}, f.N, f.C, f.V);
    EXPECT_TRUE(close(f.file.read_f32("ce"), losses, 1e-5, 1e-6));
    EXPECT_TRUE(close(f.file.read_f32("kl"), kl, 1e-5, 1e-6));
    EXPECT_TRUE(close(f.file.read_f32("dx"), dx, 1e-5, 1e-6));
    EXPECT_TRUE(close(f.file.read_f32("dwte"), dwte, 1e-5, 1e-6));
}

// The kernel on the fixture's case, against PyTorch directly: fp32 within 1e-5, bf16 within
// its rounding. In one pass the rows go in blocks of s.rows; where bf16 GEMMs are native (and
// the chunked passes the rule) in blocks of what their scratch holds (5 rows · chunk 4 hold one
// row of 19).
TEST(LmHeadDistillTwin, KernelMatchesPyTorchInOnePassAndInBlocks) {
    const Fixture f;
    const auto& p = f.params;
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    for (const bool half : {false, true}) {
        for (const int64_t rows : {int64_t{2}, int64_t{64}}) {
            const kernels::LmHeadLossShape s{.N = f.N, .C = f.C, .V = f.V, .Vp = f.V, .chunk = 4, .rows = rows};
            const int64_t scratch = std::max(rows, f.N) * kernels::lm_head_row_stride(f.V);
            std::vector<float> losses(f.N, kNaN), lse(f.N, kNaN), target_logit(f.N, kNaN), kl(f.N, kNaN),
                logits(scratch, kNaN), dx(f.N * f.C, kNaN), dwte(f.V * f.C, kNaN);
            std::vector<bf16> dlogits_h(scratch, to_bf16(kNaN));  // NaN: padding never read
            const kernels::SoftTargets soft{.logp = f.logp.data(), .temperature = p[0], .task_weight = p[1],
                                            .kl_weight = p[2], .kl = kl.data()};
            if (half) {
                std::vector<bf16> x_h(f.x.size()), wte_h(f.wte.size());
                kernels::to_bf16(x_h.data(), f.x.data(), static_cast<int64_t>(f.x.size()));
                kernels::to_bf16(wte_h.data(), f.wte.data(), static_cast<int64_t>(f.wte.size()));
                kernels::lm_head_loss_train(*gemm, s, losses.data(), lse.data(), dx.data(), dwte.data(), nullptr,
                                            false, x_h.data(), wte_h.data(), nullptr, f.targets.data(), p[3],
                                            logits.data(), dlogits_h.data(), target_logit.data(), nullptr, &soft);
            } else {
                kernels::lm_head_loss_train(*gemm, s, losses.data(), lse.data(), dx.data(), dwte.data(), nullptr,
                                            false, f.x.data(), f.wte.data(), nullptr, f.targets.data(), p[3],
                                            logits.data(), logits.data(), target_logit.data(), nullptr, &soft);
            }
            const double tol = half ? 3e-2 : 1e-5;
            const auto where = ::testing::Message() << (half ? "bf16" : "fp32") << ", rows " << rows;
            const auto want_dx = f.file.read_f32("dx"), want_dwte = f.file.read_f32("dwte");
            EXPECT_TRUE(close(losses, f.file.read_f32("ce"), tol, tol)) << where;
            EXPECT_TRUE(close(kl, f.file.read_f32("kl"), tol, tol)) << where;
            EXPECT_TRUE(close(dx, want_dx, tol, tol * max_abs(std::span<const float>(want_dx)))) << where;
            EXPECT_TRUE(close(dwte, want_dwte, tol, tol * max_abs(std::span<const float>(want_dwte)))) << where;
        }
    }
}

// The teacher's soft targets from its logits: the chosen rows of a padded (stride > V) buffer.
TEST(TeacherLogProbs, KernelMatchesTwinOnChosenRowsOfPaddedLogits) {
    const int64_t rows = 6, V = 37, stride = 64;
    const auto logits = random_vector(rows * stride, 5, 4.0f);
    const std::vector<int32_t> chosen = {5, 0, 3};
    for (const float T : {1.0f, 2.0f, 0.5f}) {
        std::vector<float> logp(chosen.size() * V, kNaN);
        kernels::teacher_log_probs(logp.data(), logits.data(), chosen.data(), 3, V, stride, T);
        for (size_t m = 0; m < chosen.size(); m++) {
            const auto row = convert<double>(std::vector<float>(logits.begin() + chosen[m] * stride,
                                                                logits.begin() + chosen[m] * stride + V));
            const auto want = kernels::ref::log_softmax_at(row.data(), V, double{T});
            EXPECT_TRUE(close(std::span<const float>(logp.data() + m * V, V), std::span<const double>(want),
                              kTwinRtol, kTwinAtol))
                << "T " << T << ", row " << chosen[m];
        }
    }
}

// The hidden-state term: finite differences on the twin, the twin against torch's
// cosine_similarity, and the kernel (fp32 and bf16 hidden states) against the twin.
TEST(CosineDistanceGrad, FiniteDifferencesOnTheTwin) {
    const int64_t rows = 4, C = 5, M = 3;
    auto h = random_vector<double>(rows * C, 7, 2.0f);
    const auto t = random_vector<double>(M * C, 8, 2.0f);
    const std::vector<int32_t> at = {2, 0, 3};
    const double scale = 0.6;
    std::vector<double> dh(rows * C, 0.0), loss(M);
    kernels::ref::cosine_distance_backward(dh.data(), loss.data(), h.data(), t.data(), at.data(), M, C, scale);
    const auto total = [&] {
        std::vector<double> g(rows * C, 0.0), l(M);
        kernels::ref::cosine_distance_backward(g.data(), l.data(), h.data(), t.data(), at.data(), M, C, scale);
        double sum = 0;
        for (const double v : l) sum += scale * v;
        return sum;
    };
    expect_matches_finite_differences({{"h", &h, &dh}}, total);
}

TEST(CosineDistanceTwin, TwinMatchesPyTorchAndKernelMatchesTwin) {
    const Fixture f;
    const auto h = f.file.read_f32("hidden"), t = f.file.read_f32("teacher_hidden");
    const auto rows = f.file.read_i32("hidden_rows");
    const float scale = f.file.read_f32("cos_scale")[0];
    const int64_t C = f.file.info("hidden").shape[1], M = static_cast<int64_t>(rows.size());
    std::vector<double> dh(h.size(), 0.0), loss(M);
    kernels::ref::cosine_distance_backward(dh.data(), loss.data(), convert<double>(h).data(), convert<double>(t).data(),
                                           rows.data(), M, C, double{scale});
    EXPECT_TRUE(close(f.file.read_f32("cos_loss"), loss, 1e-5, 1e-6));
    EXPECT_TRUE(close(f.file.read_f32("dhidden"), dh, 1e-5, 1e-6));
    // The kernel adds to what dh holds already.
    const auto before = random_vector(static_cast<int64_t>(h.size()), 9);
    std::vector<float> got = before, got_loss(M, kNaN);
    kernels::cosine_distance_backward(got.data(), got_loss.data(), h.data(), t.data(), rows.data(), M, C, scale);
    std::vector<double> want = convert<double>(before);
    for (size_t i = 0; i < want.size(); i++) want[i] += dh[i];
    EXPECT_TRUE(close(got, want, kTwinRtol, kTwinAtol));
    EXPECT_TRUE(close(got_loss, loss, kTwinRtol, kTwinAtol));
    // From bf16 hidden states: the twin on the same rounded values.
    std::vector<bf16> h_h(h.size());
    kernels::to_bf16(h_h.data(), h.data(), static_cast<int64_t>(h.size()));
    std::vector<double> widened(h.size()), dh_r(h.size(), 0.0);
    for (size_t i = 0; i < h.size(); i++) widened[i] = from_bf16(h_h[i]);
    kernels::ref::cosine_distance_backward(dh_r.data(), loss.data(), widened.data(), convert<double>(t).data(),
                                           rows.data(), M, C, double{scale});
    std::vector<float> got_h(h.size(), 0.0f);
    kernels::cosine_distance_backward(got_h.data(), got_loss.data(), h_h.data(), t.data(), rows.data(), M, C, scale);
    EXPECT_TRUE(close(got_h, dh_r, kTwinRtol, kTwinAtol));
}

}  // namespace
}  // namespace lmforge::test
