// The LM head fused with cross-entropy over vocabulary chunks: finite differences on the
// unfused twin, then the chunked kernel against it — the same loss and gradients for every
// chunk size, whether chunks divide the vocabulary or not, with and without an output bias,
// in fp32 and in bf16; and training's one-pass kernel over row blocks against the same twin.
#include "kernels/lm_head_loss.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/rng.h"
#include "gradcheck.h"
#include "kernels/bf16.h"
#include "kernels/ref/lm_head_loss.h"

namespace lmforge::test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(LmHeadLossGrad, FiniteDifferences) {
    const int64_t N = 4, C = 3, V = 5, Vp = 8;  // three padding rows in wte
    auto x = random_vector<double>(N * C, 1, 2.0f), wte = random_vector<double>(Vp * C, 2, 2.0f),
         bias = random_vector<double>(V, 3);
    const std::vector<int32_t> targets = {0, 4, kernels::kIgnoreIndex, 2};
    const double dloss = 0.7;
    std::vector<double> losses(N), lse(N), dx(N * C), dwte(Vp * C), dbias(V);
    kernels::ref::lm_head_loss(losses.data(), lse.data(), dx.data(), dwte.data(), dbias.data(), x.data(), wte.data(),
                               bias.data(), targets.data(), dloss, N, C, V, Vp);
    const auto loss = [&] {
        std::vector<double> l(N), s(N), gx(N * C), gw(Vp * C);
        kernels::ref::lm_head_loss(l.data(), s.data(), gx.data(), gw.data(), static_cast<double*>(nullptr), x.data(),
                                   wte.data(), bias.data(), targets.data(), dloss, N, C, V, Vp);
        double total = 0;
        for (double v : l) total += dloss * v;
        return total;
    };
    expect_matches_finite_differences({{"x", &x, &dx}, {"wte", &wte, &dwte}, {"bias", &bias, &dbias}}, loss);
}

struct Case {
    int64_t N, C, V, Vp;
};

// Random inputs with garbage in wte's padding rows (it must not reach the loss) and some
// ignored targets.
struct Inputs {
    std::vector<float> x, wte, bias;
    std::vector<int32_t> targets;
    Inputs(const Case& c, uint64_t seed)
        : x(random_vector(c.N * c.C, seed)), wte(random_vector(c.Vp * c.C, seed + 1)),
          bias(random_vector(c.V, seed + 3)) {
        for (int64_t i = c.V * c.C; i < c.Vp * c.C; i++) wte[i] = 1e3f;
        Rng rng(seed + 2);
        for (int64_t n = 0; n < c.N; n++) targets.push_back(static_cast<int32_t>(rng.below(c.V)));
        if (c.N > 2) targets[1] = kernels::kIgnoreIndex;
    }
};

// The twin's results; bias may be null. row_max: each row's largest logit, by definition.
struct Expected {
    std::vector<double> losses, lse, dx, dwte, dbias, row_max;
    Expected(const Case& c, const std::vector<double>& x, const std::vector<double>& wte, const double* bias,
             const std::vector<int32_t>& targets, double dloss)
        : losses(c.N), lse(c.N), dx(c.N * c.C), dwte(c.Vp * c.C), dbias(c.V), row_max(c.N) {
        kernels::ref::lm_head_loss(losses.data(), lse.data(), dx.data(), dwte.data(), dbias.data(), x.data(),
                                   wte.data(), bias, targets.data(), dloss, c.N, c.C, c.V, c.Vp);
        for (int64_t n = 0; n < c.N; n++) {
            row_max[n] = -std::numeric_limits<double>::infinity();
            for (int64_t v = 0; v < c.V; v++) {
                double logit = bias != nullptr ? bias[v] : 0.0;
                for (int64_t k = 0; k < c.C; k++) logit += x[n * c.C + k] * wte[v * c.C + k];
                row_max[n] = std::max(row_max[n], logit);
            }
        }
    }
};

const Case kCases[] = {{1, 1, 1, 64}, {13, 24, 101, 128}, {7, 40, 300, 320}};
constexpr float kDloss = 0.25f;

class LmHeadLossTwin : public ::testing::TestWithParam<backend::GemmKind> {};

TEST_P(LmHeadLossTwin, ChunkedEqualsUnfusedLossAndGradient) {
    auto gemm = backend::make_gemm(GetParam());
    for (const bool with_bias : {false, true}) {
        for (const Case& c : kCases) {
            const Inputs in(c, 3);
            const auto bias_r = convert<double>(in.bias);
            const float* bias = with_bias ? in.bias.data() : nullptr;
            const Expected want(c, convert<double>(in.x), convert<double>(in.wte), with_bias ? bias_r.data() : nullptr,
                                in.targets, kDloss);
            // 64 and 100 split the vocabulary (100 leaves a remainder); V is one chunk.
            for (const int64_t chunk : {int64_t{64}, int64_t{100}, c.V}) {
                const auto where = ::testing::Message() << c.V << " by " << chunk << (with_bias ? ", bias" : "");
                const kernels::LmHeadLossShape s{.N = c.N, .C = c.C, .V = c.V, .Vp = c.Vp, .chunk = chunk};
                std::vector<float> losses(c.N), lse(c.N), logits(c.N * chunk), target_logit(c.N), row_max(c.N);
                kernels::lm_head_loss_forward(*gemm, s, losses.data(), lse.data(), in.x.data(), in.wte.data(), bias,
                                              in.targets.data(), logits.data(), target_logit.data(), row_max.data());
                EXPECT_TRUE(close(losses, want.losses, kTwinRtol, kTwinAtol)) << where;
                EXPECT_TRUE(close(lse, want.lse, kTwinRtol, kTwinAtol)) << where;
                EXPECT_TRUE(close(row_max, want.row_max, kTwinRtol, kTwinAtol)) << where;
                // NaN where the kernel must write; dlogits in place over the logits, as in fp32 training.
                std::vector<float> dx(c.N * c.C, kNaN), dwte(c.Vp * c.C, kNaN), dbias_values(c.V, kNaN);
                float* dbias = with_bias ? dbias_values.data() : nullptr;
                kernels::lm_head_loss_backward(*gemm, s, dx.data(), dwte.data(), dbias, false, in.x.data(),
                                               in.wte.data(), bias, lse.data(), in.targets.data(), kDloss,
                                               logits.data(), logits.data());
                EXPECT_TRUE(close(dx, want.dx, kTwinRtol, kTwinAtol)) << where;
                EXPECT_TRUE(close(dwte, want.dwte, kTwinRtol, kTwinAtol)) << where;
                if (with_bias) {
                    EXPECT_TRUE(close(dbias_values, want.dbias, kTwinRtol, kTwinAtol)) << where;
                }
                // Accumulating: dwte and dbias += the same gradient.
                auto dwte_acc = random_vector(c.Vp * c.C, 9), dbias_acc = random_vector(c.V, 10);
                auto want_acc = convert<double>(dwte_acc), want_dbias_acc = convert<double>(dbias_acc);
                for (size_t i = 0; i < want_acc.size(); i++) want_acc[i] += want.dwte[i];
                for (size_t i = 0; i < want_dbias_acc.size(); i++) want_dbias_acc[i] += want.dbias[i];
                kernels::lm_head_loss_backward(*gemm, s, dx.data(), dwte_acc.data(),
                                               with_bias ? dbias_acc.data() : nullptr, true, in.x.data(),
                                               in.wte.data(), bias, lse.data(), in.targets.data(), kDloss,
                                               logits.data(), logits.data());
                EXPECT_TRUE(close(dwte_acc, want_acc, kTwinRtol, kTwinAtol)) << where;
                if (with_bias) {
                    EXPECT_TRUE(close(dbias_acc, want_dbias_acc, kTwinRtol, kTwinAtol)) << where;
                }
            }
        }
    }
}

// Mixed precision: x and wte rounded to bf16, the twin run on the rounded values in double.
// The loss matches as fp32 does; dx and dwte carry dlogits' bf16 rounding (2⁻⁹ relative);
// dbias, summed from the fp32 dlogits, matches as fp32 does (bf16 dlogits would miss by
// about 2⁻⁹ of its terms, far outside that tolerance).
TEST_P(LmHeadLossTwin, Bf16ChunkedMatchesTwinOnRoundedInputs) {
    auto gemm = backend::make_gemm(GetParam());
    for (const bool with_bias : {false, true}) {
        for (const Case& c : kCases) {
            const Inputs in(c, 4);
            const auto [x_h, x_r] = round_to_bf16(in.x);
            const auto [wte_h, wte_r] = round_to_bf16(in.wte);
            const auto bias_r = convert<double>(in.bias);
            const float* bias = with_bias ? in.bias.data() : nullptr;
            const Expected want(c, x_r, wte_r, with_bias ? bias_r.data() : nullptr, in.targets, kDloss);
            for (const int64_t chunk : {int64_t{64}, c.V}) {
                const auto where = ::testing::Message() << c.V << " by " << chunk << (with_bias ? ", bias" : "");
                const kernels::LmHeadLossShape s{.N = c.N, .C = c.C, .V = c.V, .Vp = c.Vp, .chunk = chunk};
                std::vector<float> losses(c.N), lse(c.N), logits(c.N * chunk), scratch(c.N);
                std::vector<bf16> dlogits(c.N * chunk);
                kernels::lm_head_loss_forward(*gemm, s, losses.data(), lse.data(), x_h.data(), wte_h.data(), bias,
                                              in.targets.data(), logits.data(), scratch.data());
                EXPECT_TRUE(close(losses, want.losses, kTwinRtol, kTwinAtol)) << where;
                std::vector<float> dx(c.N * c.C, kNaN), dwte(c.Vp * c.C, kNaN), dbias(c.V, kNaN);
                kernels::lm_head_loss_backward(*gemm, s, dx.data(), dwte.data(), with_bias ? dbias.data() : nullptr,
                                               false, x_h.data(), wte_h.data(), bias, lse.data(), in.targets.data(),
                                               kDloss, logits.data(), dlogits.data());
                const double bf16_tol = 8e-3;
                EXPECT_TRUE(close(dx, want.dx, bf16_tol, bf16_tol * max_abs(std::span<const double>(want.dx))))
                    << where;
                EXPECT_TRUE(close(dwte, want.dwte, bf16_tol, bf16_tol * max_abs(std::span<const double>(want.dwte))))
                    << where;
                if (with_bias) {
                    EXPECT_TRUE(close(dbias, want.dbias, kTwinRtol, 1e-7)) << where;
                }
            }
        }
    }
}

// Training's one-pass kernel (forward and backward over row blocks): the same loss, row
// maxima and gradients as the twin for blocks that divide the rows, leave a remainder or take
// them all; overwriting or accumulating into dwte and dbias; and in bf16 on rounded inputs
// (with oneDNN on a CPU with AMX, the chunked passes it takes there instead).
TEST_P(LmHeadLossTwin, TrainInOnePassEqualsUnfused) {
    auto gemm = backend::make_gemm(GetParam());
    for (const bool half : {false, true}) {
        for (const bool with_bias : {false, true}) {
            for (const Case& c : kCases) {
                const Inputs in(c, 5);
                const auto [x_h, x_r] = round_to_bf16(in.x);
                const auto [wte_h, wte_r] = round_to_bf16(in.wte);
                const auto bias_r = convert<double>(in.bias);
                const float* bias = with_bias ? in.bias.data() : nullptr;
                const Expected want(c, half ? x_r : convert<double>(in.x), half ? wte_r : convert<double>(in.wte),
                                    with_bias ? bias_r.data() : nullptr, in.targets, kDloss);
                const double grad_tol = half ? 8e-3 : kTwinRtol;
                for (const int64_t rows : {int64_t{1}, int64_t{5}, c.N}) {
                    for (const bool accumulate : {false, true}) {
                        const auto where = ::testing::Message() << c.N << " rows by " << rows << (half ? ", bf16" : "")
                                                                << (with_bias ? ", bias" : "")
                                                                << (accumulate ? ", accumulating" : "");
                        // (With native bf16 GEMMs, bf16 takes the chunked passes: 64 columns.)
                        const kernels::LmHeadLossShape s{
                            .N = c.N, .C = c.C, .V = c.V, .Vp = c.Vp, .chunk = 64, .rows = rows};
                        const int64_t scratch = std::max(rows * kernels::lm_head_row_stride(c.V), c.N * s.chunk);
                        std::vector<float> losses(c.N, kNaN), lse(c.N, kNaN), target_logit(c.N, kNaN),
                            row_max(c.N, kNaN), logits(scratch, kNaN), dx(c.N * c.C, kNaN);
                        std::vector<bf16> dlogits_h(scratch, to_bf16(kNaN));  // NaN: padding never read
                        auto dwte = accumulate ? random_vector(c.Vp * c.C, 9) : std::vector<float>(c.Vp * c.C, kNaN);
                        auto dbias = accumulate ? random_vector(c.V, 10) : std::vector<float>(c.V, kNaN);
                        auto want_dwte = want.dwte, want_dbias = want.dbias;
                        for (size_t i = 0; accumulate && i < want_dwte.size(); i++) want_dwte[i] += dwte[i];
                        for (size_t i = 0; accumulate && i < want_dbias.size(); i++) want_dbias[i] += dbias[i];
                        float* db = with_bias ? dbias.data() : nullptr;
                        if (half) {
                            kernels::lm_head_loss_train(*gemm, s, losses.data(), lse.data(), dx.data(), dwte.data(),
                                                        db, accumulate, x_h.data(), wte_h.data(), bias,
                                                        in.targets.data(), kDloss, logits.data(), dlogits_h.data(),
                                                        target_logit.data(), row_max.data());
                        } else {
                            kernels::lm_head_loss_train(*gemm, s, losses.data(), lse.data(), dx.data(), dwte.data(),
                                                        db, accumulate, in.x.data(), in.wte.data(), bias,
                                                        in.targets.data(), kDloss, logits.data(), logits.data(),
                                                        target_logit.data(), row_max.data());
                        }
                        EXPECT_TRUE(close(losses, want.losses, kTwinRtol, kTwinAtol)) << where;
                        EXPECT_TRUE(close(lse, want.lse, kTwinRtol, kTwinAtol)) << where;
                        EXPECT_TRUE(close(row_max, want.row_max, kTwinRtol, kTwinAtol)) << where;
                        EXPECT_TRUE(close(dx, want.dx, grad_tol, grad_tol * max_abs(std::span<const double>(want.dx))))
                            << where;
                        EXPECT_TRUE(close(dwte, want_dwte, grad_tol,
                                          grad_tol * max_abs(std::span<const double>(want.dwte))))
                            << where;
                        if (with_bias) {
                            EXPECT_TRUE(close(dbias, want_dbias, kTwinRtol, half ? 1e-7 : kTwinAtol)) << where;
                        }
                        EXPECT_TRUE(close(dx, want.dx, grad_tol, grad_tol * max_abs(std::span<const double>(want.dx))))
                            << where << ", frozen";
                    }
                }
            }
        }
    }
}

// The column of each row's largest logit (no bias).
std::vector<int64_t> argmax_columns(const Case& c, const std::vector<float>& x, const std::vector<float>& wte) {
    std::vector<int64_t> columns(c.N, 0);
    for (int64_t n = 0; n < c.N; n++) {
        double best = -std::numeric_limits<double>::infinity();
        for (int64_t v = 0; v < c.V; v++) {
            double logit = 0;
            for (int64_t k = 0; k < c.C; k++) logit += double{x[n * c.C + k]} * wte[v * c.C + k];
            if (logit > best) best = logit, columns[n] = v;
        }
    }
    return columns;
}

// A frozen head (LoRA's: no weight gradient, no bias) streams the vocabulary through scratch of
// exactly N · chunk floats, rescaling a row's running sum and dx as its maximum grows: the
// twin's loss, log-sum-exp, row maxima, target logits and dx, in fp32 and in bf16, for chunks
// that divide the vocabulary, leave a remainder or hold it all.
TEST_P(LmHeadLossTwin, FrozenHeadStreamsTheVocabulary) {
    auto gemm = backend::make_gemm(GetParam());
    for (const bool half : {false, true}) {
        for (const Case& c : kCases) {
            const Inputs in(c, 11);
            const auto [x_h, x_r] = round_to_bf16(in.x);
            const auto [wte_h, wte_r] = round_to_bf16(in.wte);
            const Expected want(c, half ? x_r : convert<double>(in.x), half ? wte_r : convert<double>(in.wte),
                                nullptr, in.targets, kDloss);
            const auto maxima_at = argmax_columns(c, in.x, in.wte);
            const double grad_tol = half ? 8e-3 : kTwinRtol;
            for (const int64_t chunk : {int64_t{32}, int64_t{100}, c.V}) {
                const auto where = ::testing::Message() << c.V << " by " << chunk << (half ? ", bf16" : "");
                // The rescaling is tested only if some row's maximum lies past its first chunk.
                if (c.N > 1 && chunk == 32) {
                    EXPECT_TRUE(std::any_of(maxima_at.begin(), maxima_at.end(), [&](int64_t v) { return v >= chunk; }))
                        << where;
                }
                const kernels::LmHeadLossShape s{.N = c.N, .C = c.C, .V = c.V, .Vp = c.Vp, .chunk = chunk, .rows = 1};
                std::vector<float> losses(c.N, kNaN), lse(c.N, kNaN), target_logit(c.N, kNaN), row_max(c.N, kNaN),
                    logits(c.N * chunk), dx(c.N * c.C, kNaN);
                if (half) {
                    kernels::lm_head_loss_train(*gemm, s, losses.data(), lse.data(), dx.data(), kernels::GradOut(),
                                                nullptr, false, x_h.data(), wte_h.data(), nullptr, in.targets.data(),
                                                kDloss, logits.data(), static_cast<bf16*>(nullptr),
                                                target_logit.data(), row_max.data());
                } else {
                    kernels::lm_head_loss_train(*gemm, s, losses.data(), lse.data(), dx.data(), kernels::GradOut(),
                                                nullptr, false, in.x.data(), in.wte.data(), nullptr,
                                                in.targets.data(), kDloss, logits.data(), static_cast<float*>(nullptr),
                                                target_logit.data(), row_max.data());
                }
                EXPECT_TRUE(close(losses, want.losses, kTwinRtol, kTwinAtol)) << where;
                EXPECT_TRUE(close(lse, want.lse, kTwinRtol, kTwinAtol)) << where;
                EXPECT_TRUE(close(row_max, want.row_max, kTwinRtol, kTwinAtol)) << where;
                for (int64_t n = 0; n < c.N; n++) {
                    const int64_t t = in.targets[n];
                    const double logit = t == kernels::kIgnoreIndex ? 0.0 : want.lse[n] - want.losses[n];
                    EXPECT_NEAR(target_logit[n], logit, kTwinRtol * std::abs(logit) + kTwinAtol) << where << ", row " << n;
                }
                EXPECT_TRUE(close(dx, want.dx, grad_tol, grad_tol * max_abs(std::span<const double>(want.dx))))
                    << where;
            }
        }
    }
}

TEST_P(LmHeadLossTwin, Bf16WeightGradientIsTheFp32OneRounded) {
    // Into bf16 gradients (kernels/grad_out.h) the embedding's gradient is summed in fp32 blocks
    // of 3 of its rows here, then rounded, with the gradient's own value when accumulating, once
    // per block of head rows: within a few bf16 steps of the fp32 gradient's largest value.
    auto gemm = backend::make_gemm(GetParam());
    for (const Case& c : kCases) {
        const Inputs in(c, 5);
        const auto [x_h, x_r] = round_to_bf16(in.x);
        const auto [wte_h, wte_r] = round_to_bf16(in.wte);
        for (const int64_t rows : {int64_t{5}, c.N}) {
            for (const bool accumulate : {false, true}) {
                const kernels::LmHeadLossShape s{.N = c.N, .C = c.C, .V = c.V, .Vp = c.Vp, .chunk = 64, .rows = rows};
                const int64_t scratch = std::max(rows * kernels::lm_head_row_stride(c.V), c.N * s.chunk);
                std::vector<float> losses(c.N), lse(c.N), target_logit(c.N), logits(scratch, kNaN), dx(c.N * c.C);
                std::vector<bf16> dlogits_h(scratch, to_bf16(kNaN));
                const auto start = random_vector(c.Vp * c.C, 9);
                std::vector<bf16> dwte_h(start.size(), to_bf16(kNaN));
                std::vector<float> dwte(start.size(), kNaN), sums(3 * c.C + 1);
                for (size_t i = 0; accumulate && i < start.size(); i++) {
                    dwte_h[i] = to_bf16(start[i]);
                    dwte[i] = from_bf16(dwte_h[i]);
                }
                const auto train = [&](kernels::GradOut dw) {
                    kernels::lm_head_loss_train(*gemm, s, losses.data(), lse.data(), dx.data(), dw, nullptr, accumulate,
                                                x_h.data(), wte_h.data(), nullptr, in.targets.data(), kDloss,
                                                logits.data(), dlogits_h.data(), target_logit.data());
                };
                train(dwte.data());
                train({dwte_h.data(), sums.data(), static_cast<int64_t>(sums.size())});
                const double largest = max_abs(std::span<const float>(dwte));
                for (size_t i = 0; i < dwte.size(); i++) {
                    ASSERT_NEAR(from_bf16(dwte_h[i]), dwte[i], 0x1p-6 * largest)
                        << i << " of " << c.N << " rows by " << rows << (accumulate ? ", accumulating" : "");
                }
            }
        }
        const auto too_few = [&] {
            std::vector<float> losses(c.N), lse(c.N), target_logit(c.N), logits(c.N * c.V + c.N * 64), dx(c.N * c.C);
            std::vector<bf16> dlogits_h(logits.size()), dwte_h(c.Vp * c.C);
            std::vector<float> sums(c.C);  // said to hold C - 1 floats: less than one row
            kernels::lm_head_loss_train(*gemm, {.N = c.N, .C = c.C, .V = c.V, .Vp = c.Vp, .chunk = 64, .rows = c.N},
                                        losses.data(), lse.data(), dx.data(),
                                        {dwte_h.data(), sums.data(), c.C - 1}, nullptr, false, x_h.data(),
                                        wte_h.data(), nullptr, in.targets.data(), kDloss, logits.data(),
                                        dlogits_h.data(), target_logit.data());
        };
        EXPECT_THROW(too_few(), Error) << c.N;
    }
}

TEST(LmHeadShape, AZeroChunkOrRowBlockIsRefusedNotLoopedOn) {
    auto gemm = backend::make_gemm(backend::GemmKind::Naive);
    const Case c{2, 4, 10, 64};
    const Inputs in(c, 1);
    std::vector<float> losses(c.N), lse(c.N), target_logit(c.N), scratch(c.N * c.V), dx(c.N * c.C), dwte(c.Vp * c.C);
    const kernels::LmHeadLossShape no_chunk{.N = c.N, .C = c.C, .V = c.V, .Vp = c.Vp, .chunk = 0, .rows = 1};
    EXPECT_THROW(kernels::lm_head_loss_forward(*gemm, no_chunk, losses.data(), lse.data(), in.x.data(), in.wte.data(),
                                               nullptr, in.targets.data(), scratch.data(), target_logit.data()),
                 Error);
    const kernels::LmHeadLossShape no_rows{.N = c.N, .C = c.C, .V = c.V, .Vp = c.Vp, .chunk = 5, .rows = 0};
    EXPECT_THROW(kernels::lm_head_loss_train(*gemm, no_rows, losses.data(), lse.data(), dx.data(), dwte.data(),
                                             nullptr, false, in.x.data(), in.wte.data(), nullptr, in.targets.data(),
                                             kDloss, scratch.data(), scratch.data(), target_logit.data()),
                 Error);
}

TEST(LmHeadRows, BlocksStayUnderBudget) {
    EXPECT_EQ(kernels::lm_head_rows(256, 50257), 256);    // GPT-2 124M, B=4 T=64: 49 MiB, one block
    EXPECT_EQ(kernels::lm_head_rows(2048, 50257), 320);   // 320 · 50257 floats: 61 MiB
    EXPECT_EQ(kernels::lm_head_rows(4096, 65), 4096);     // a small vocabulary: one block
    EXPECT_EQ(kernels::lm_head_rows(100, 50257), 100);
    EXPECT_EQ(kernels::lm_head_rows(512, 128256), 256);   // Llama 3's vocabulary: 256 rows, not 128
    EXPECT_EQ(kernels::lm_head_rows(4096, 128256), 256);
    EXPECT_EQ(kernels::lm_head_rows(20, 50257), 20);
    EXPECT_EQ(kernels::lm_head_rows(1, 50257), 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, LmHeadLossTwin,
                         ::testing::Values(backend::GemmKind::Onednn, backend::GemmKind::Naive),
                         [](const auto& info) { return std::string(backend::make_gemm(info.param)->name()); });

}  // namespace
}  // namespace lmforge::test
