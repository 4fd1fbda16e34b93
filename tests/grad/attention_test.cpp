// Self-attention, causal (GPT-2) and bidirectional with padding (BERT), multi-head and
// grouped-query (Llama): finite differences on
// the twin; the tiled online-softmax kernel against the textbook twin, on lengths that cross
// and miss the tile edges.
#include "backend/amx_tiles.h"
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "gradcheck.h"
#include "kernels/ref/attention.h"

namespace lmforge::test {
namespace {

TEST(AttentionGrad, FiniteDifferences) {
    const int64_t B = 2, T = 4, NH = 2, C = 6;  // HS = 3
    auto qkv = random_vector<double>(B * T * 3 * C, 1);
    const auto dout = random_vector<double>(B * T * C, 2);
    std::vector<double> out(B * T * C), lse(B * NH * T), dqkv(qkv.size());
    kernels::ref::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, NH);
    kernels::ref::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(),
                                     B, T, C, NH, NH);
    const auto loss = [&] {
        std::vector<double> o(B * T * C), l(B * NH * T);
        kernels::ref::attention_forward(o.data(), l.data(), qkv.data(), B, T, C, NH, NH);
        return dot(o, dout);
    };
    expect_matches_finite_differences({{"qkv", &qkv, &dqkv}}, loss);
}

TEST(AttentionGrad, FiniteDifferencesBidirectionalWithPadding) {
    const int64_t B = 2, T = 5, NH = 2, C = 6;
    const int32_t key_len[B] = {3, 5};  // sequence 0 has two padded positions
    for (const bool causal : {false, true}) {
        const kernels::AttentionMask mask{.causal = causal, .key_len = key_len};
        auto qkv = random_vector<double>(B * T * 3 * C, 5);
        const auto dout = random_vector<double>(B * T * C, 6);
        std::vector<double> out(B * T * C), lse(B * NH * T), dqkv(qkv.size());
        kernels::ref::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, NH, mask);
        kernels::ref::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T, C, NH, NH,
                                         mask);
        const auto loss = [&] {
            std::vector<double> o(B * T * C), l(B * NH * T);
            kernels::ref::attention_forward(o.data(), l.data(), qkv.data(), B, T, C, NH, NH, mask);
            return dot(o, dout);
        };
        expect_matches_finite_differences({{"qkv", &qkv, &dqkv}}, loss);
    }
}

// Grouped-query attention: 6 query heads share 3 or 1 key/value heads (dK, dV sum the group).
TEST(AttentionGrad, FiniteDifferencesGroupedQuery) {
    const int64_t B = 2, T = 4, NH = 6, HS = 2, C = NH * HS;
    for (const int64_t NKV : {3, 1}) {
        auto qkv = random_vector<double>(B * T * (C + 2 * NKV * HS), 11);
        const auto dout = random_vector<double>(B * T * C, 12);
        std::vector<double> out(B * T * C), lse(B * NH * T), dqkv(qkv.size());
        kernels::ref::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, NKV);
        kernels::ref::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T, C, NH,
                                         NKV);
        const auto loss = [&] {
            std::vector<double> o(B * T * C), l(B * NH * T);
            kernels::ref::attention_forward(o.data(), l.data(), qkv.data(), B, T, C, NH, NKV);
            return dot(o, dout);
        };
        expect_matches_finite_differences({{"qkv", &qkv, &dqkv}}, loss);
    }
}

// Grouped-query attention is multi-head attention with each key/value head repeated over its
// group: the twin on repeated heads gives the same outputs, and the repeated heads' gradients
// summed over the group give the grouped ones.
TEST(AttentionTwin, GroupedQueryEqualsRepeatedKeyValueHeads) {
    const int64_t B = 2, T = 5, NH = 4, NKV = 2, HS = 3, C = NH * HS, KVC = NKV * HS, G = NH / NKV;
    const auto qkv = random_vector<double>(B * T * (C + 2 * KVC), 13);
    const auto dout = random_vector<double>(B * T * C, 14);
    std::vector<double> full(B * T * 3 * C);
    for (int64_t n = 0; n < B * T; n++) {
        const double* g = qkv.data() + n * (C + 2 * KVC);
        double* f = full.data() + n * 3 * C;
        std::copy_n(g, C, f);
        for (int64_t h = 0; h < NH; h++) {
            std::copy_n(g + C + h / G * HS, HS, f + C + h * HS);
            std::copy_n(g + C + KVC + h / G * HS, HS, f + 2 * C + h * HS);
        }
    }
    std::vector<double> out(B * T * C), lse(B * NH * T), out_f(out.size()), lse_f(lse.size());
    kernels::ref::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, NKV);
    kernels::ref::attention_forward(out_f.data(), lse_f.data(), full.data(), B, T, C, NH, NH);
    for (size_t i = 0; i < out.size(); i++) EXPECT_NEAR(out[i], out_f[i], 1e-12);
    std::vector<double> dqkv(qkv.size()), dfull(full.size());
    kernels::ref::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T, C, NH, NKV);
    kernels::ref::attention_backward(dfull.data(), dout.data(), out_f.data(), lse_f.data(), full.data(), B, T, C, NH,
                                     NH);
    for (int64_t n = 0; n < B * T; n++) {
        for (int64_t part = 1; part <= 2; part++) {  // k, then v
            for (int64_t g = 0; g < NKV; g++) {
                for (int64_t d = 0; d < HS; d++) {
                    double sum = 0;
                    for (int64_t h = g * G; h < (g + 1) * G; h++) sum += dfull[n * 3 * C + part * C + h * HS + d];
                    EXPECT_NEAR(dqkv[n * (C + 2 * KVC) + C + (part - 1) * KVC + g * HS + d], sum, 1e-12);
                }
            }
        }
    }
}

TEST(AttentionTwin, PaddedKeysChangeNothingAndGetZeroGradient) {
    // A padded sequence must give its real rows exactly what the unpadded sequence gives.
    const int64_t T = 7, NH = 1, C = 4, real = 4;
    const auto qkv = random_vector<double>(T * 3 * C, 7);
    const int32_t key_len[1] = {real};
    std::vector<double> out(T * C), lse(NH * T), out_short(real * C), lse_short(NH * real);
    std::vector<double> qkv_short(qkv.begin(), qkv.begin() + real * 3 * C);
    kernels::ref::attention_forward(out.data(), lse.data(), qkv.data(), 1, T, C, NH, NH, {false, key_len});
    kernels::ref::attention_forward(out_short.data(), lse_short.data(), qkv_short.data(), 1, real, C, NH, NH, {false});
    for (int64_t i = 0; i < real * C; i++) EXPECT_NEAR(out[i], out_short[i], 1e-12);
    // Padded query rows attend to the real keys: the same softmax inputs as any other row.
    std::vector<double> dqkv(qkv.size());
    kernels::ref::attention_backward(dqkv.data(), random_vector<double>(T * C, 8).data(), out.data(), lse.data(),
                                     qkv.data(), 1, T, C, NH, NH, {false, key_len});
    for (int64_t t = real; t < T; t++)
        for (int64_t c = C; c < 3 * C; c++) EXPECT_EQ(dqkv[t * 3 * C + c], 0.0) << "key/value row " << t;
}

TEST(AttentionTwin, KernelMatchesTwinOnRemainderShapes) {
    struct Shape { int64_t B, T, NH, C; };
    // T crosses the 64-row tile once or twice, fills it or misses it, or crosses the 256-key
    // block (the online softmax's rescaling); HS 1, 20, 64, 16, 20, 300, 16.
    for (const Shape s : {Shape{1, 1, 1, 1}, Shape{2, 13, 3, 60}, Shape{1, 33, 2, 128},
                          Shape{2, 64, 1, 64}, Shape{1, 97, 3, 48}, Shape{1, 130, 2, 40},
                          Shape{1, 70, 1, 300}, Shape{1, 300, 2, 32}}) {
        const int64_t B = s.B, T = s.T, NH = s.NH, C = s.C;
        const auto qkv = random_vector(B * T * 3 * C, 3, 2.0f);  // peaked softmaxes too
        const auto dout = random_vector(B * T * C, 4);
        std::vector<float> out(B * T * C), lse(B * NH * T);
        std::vector<double> out_r(out.size()), lse_r(lse.size());
        const auto qkv_r = convert<double>(qkv);
        kernels::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, NH);
        kernels::ref::attention_forward(out_r.data(), lse_r.data(), qkv_r.data(), B, T, C, NH, NH);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << "T=" << T << " C=" << C;
        EXPECT_TRUE(close(lse, lse_r, kTwinRtol, kTwinAtol)) << "T=" << T << " C=" << C;
        // NaN where the kernel must write: an element it skips fails the comparison.
        std::vector<float> dqkv(qkv.size(), std::numeric_limits<float>::quiet_NaN());
        std::vector<double> dqkv_r(qkv.size());
        kernels::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(),
                                    B, T, C, NH, NH);
        kernels::ref::attention_backward(dqkv_r.data(), convert<double>(dout).data(), out_r.data(),
                                         lse_r.data(), qkv_r.data(), B, T, C, NH, NH);
        EXPECT_TRUE(close(dqkv, dqkv_r, 1e-4, 1e-4)) << "T=" << T << " C=" << C;
    }
}

TEST(AttentionTwin, KernelMatchesTwinGroupedQuery) {
    struct Shape { int64_t B, T, NH, NKV, HS; };
    // Groups of 2, 3 and 8 query heads (one key/value head: multi-query), on T that crosses the
    // tile and the key block: backward's threads own key/value heads and sum their groups.
    for (const Shape s : {Shape{2, 13, 4, 2, 8}, Shape{1, 97, 6, 2, 16}, Shape{2, 70, 8, 1, 8},
                          Shape{1, 300, 4, 2, 16}}) {
        const int64_t B = s.B, T = s.T, NH = s.NH, NKV = s.NKV, C = NH * s.HS, W = C + 2 * NKV * s.HS;
        const auto qkv = random_vector(B * T * W, 15, 2.0f);
        const auto dout = random_vector(B * T * C, 16);
        std::vector<float> out(B * T * C), lse(B * NH * T);
        std::vector<double> out_r(out.size()), lse_r(lse.size());
        const auto qkv_r = convert<double>(qkv);
        kernels::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, NKV);
        kernels::ref::attention_forward(out_r.data(), lse_r.data(), qkv_r.data(), B, T, C, NH, NKV);
        EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << "T=" << T << " NKV=" << NKV;
        EXPECT_TRUE(close(lse, lse_r, kTwinRtol, kTwinAtol)) << "T=" << T << " NKV=" << NKV;
        std::vector<float> dqkv(qkv.size(), std::numeric_limits<float>::quiet_NaN());
        std::vector<double> dqkv_r(qkv.size());
        kernels::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T, C, NH, NKV);
        kernels::ref::attention_backward(dqkv_r.data(), convert<double>(dout).data(), out_r.data(), lse_r.data(),
                                         qkv_r.data(), B, T, C, NH, NKV);
        EXPECT_TRUE(close(dqkv, dqkv_r, 1e-4, 1e-4)) << "T=" << T << " NKV=" << NKV;
    }
}

TEST(AttentionTwin, KernelMatchesTwinWithPaddingMask) {
    struct Shape { int64_t B, T, NH, C; };
    for (const bool causal : {false, true}) {
        for (const Shape s : {Shape{4, 13, 3, 60}, Shape{4, 97, 2, 48}, Shape{4, 130, 2, 40}, Shape{4, 300, 2, 32}}) {
            const int64_t B = s.B, T = s.T, NH = s.NH, C = s.C;
            // Lengths: one real token, a tile edge crossed, a key block's edge crossed, no padding.
            const std::vector<int32_t> key_len = {1, static_cast<int32_t>(std::min<int64_t>(T, 70)),
                                                  static_cast<int32_t>(std::min<int64_t>(T, 270)),
                                                  static_cast<int32_t>(T)};
            const kernels::AttentionMask mask{.causal = causal, .key_len = key_len.data()};
            const auto qkv = random_vector(B * T * 3 * C, 9, 2.0f);
            const auto dout = random_vector(B * T * C, 10);
            std::vector<float> out(B * T * C), lse(B * NH * T);
            std::vector<double> out_r(out.size()), lse_r(lse.size());
            const auto qkv_r = convert<double>(qkv);
            kernels::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, NH, mask);
            kernels::ref::attention_forward(out_r.data(), lse_r.data(), qkv_r.data(), B, T, C, NH, NH, mask);
            EXPECT_TRUE(close(out, out_r, kTwinRtol, kTwinAtol)) << "causal=" << causal << " T=" << T;
            EXPECT_TRUE(close(lse, lse_r, kTwinRtol, kTwinAtol)) << "causal=" << causal << " T=" << T;
            std::vector<float> dqkv(qkv.size(), std::numeric_limits<float>::quiet_NaN());
            std::vector<double> dqkv_r(qkv.size());
            kernels::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T, C, NH, NH,
                                        mask);
            kernels::ref::attention_backward(dqkv_r.data(), convert<double>(dout).data(), out_r.data(), lse_r.data(),
                                             qkv_r.data(), B, T, C, NH, NH, mask);
            EXPECT_TRUE(close(dqkv, dqkv_r, 1e-4, 1e-4)) << "causal=" << causal << " T=" << T;
        }
    }
}

// bf16 math against the twin on the same inputs rounded to bf16 (Q, K, V and dO: their products
// are then exact in both). What is left is P and dS rounded to bf16 before their products, a
// relative 2⁻⁹ each that sums over the keys as noise: about 1e-3 of each output's size. So the
// kernel is held to an RMS error of 1e-2 of the twin's RMS (plus 1e-4, for outputs that are 0
// but for rounding: one visible key makes dS = 0); a misplaced block, pair or mask gives errors
// of order 1, and an element left unwritten (NaN) fails.
::testing::AssertionResult rms_close(const std::vector<float>& got, const std::vector<double>& want, double rtol) {
    double err = 0, norm = 0;
    for (size_t i = 0; i < got.size(); i++) {
        err += (got[i] - want[i]) * (got[i] - want[i]);
        norm += want[i] * want[i];
    }
    const double n = static_cast<double>(got.size()), rms_err = std::sqrt(err / n), rms = std::sqrt(norm / n);
    if (rms_err <= rtol * rms + 1e-4) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "RMS error " << rms_err << " against the twin's RMS " << rms;
}

std::vector<float> bf16_values(const std::vector<float>& x) { return convert<float>(round_to_bf16(x).second); }

void expect_bf16_kernel_matches_twin_on_remainder_shapes() {
    struct Shape { int64_t B, T, NH, NKV, HS; };
    // T across the tile and the key block; odd T (a key pair half empty) and odd HS (a channel
    // pair half empty); HS past 64 (several column vectors), grouped and multi-query heads.
    for (const Shape s : {Shape{1, 1, 1, 1, 1}, Shape{2, 13, 3, 3, 20}, Shape{1, 33, 2, 1, 64},
                          Shape{2, 64, 1, 1, 64}, Shape{1, 97, 4, 2, 17}, Shape{1, 130, 2, 2, 20},
                          Shape{1, 70, 1, 1, 300}, Shape{1, 301, 4, 2, 16}, Shape{2, 257, 2, 1, 33}}) {
        for (const bool padded : {false, true}) {
            const int64_t B = s.B, T = s.T, NH = s.NH, NKV = s.NKV, C = NH * s.HS, W = C + 2 * NKV * s.HS;
            std::vector<int32_t> key_len(B, static_cast<int32_t>(T));
            if (padded) key_len[0] = static_cast<int32_t>(std::max<int64_t>(1, T - 70));
            const kernels::AttentionMask mask{.causal = !padded, .key_len = padded ? key_len.data() : nullptr};
            const auto qkv = bf16_values(random_vector(B * T * W, 17, 2.0f));
            const auto dout = bf16_values(random_vector(B * T * C, 18));
            std::vector<float> out(B * T * C, std::numeric_limits<float>::quiet_NaN()), lse(B * NH * T);
            std::vector<double> out_r(out.size()), lse_r(lse.size());
            const auto qkv_r = convert<double>(qkv);
            kernels::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, NKV, mask,
                                       kernels::AttentionMath::Bf16);
            kernels::ref::attention_forward(out_r.data(), lse_r.data(), qkv_r.data(), B, T, C, NH, NKV, mask);
            const std::string where = "T=" + std::to_string(T) + " HS=" + std::to_string(s.HS) +
                                      (padded ? " padded" : " causal");
            EXPECT_TRUE(rms_close(out, out_r, 1e-2)) << where;
            // The scores are sums of exact products: lse is the fp32 kernel's to float rounding.
            EXPECT_TRUE(close(lse, lse_r, 1e-4, 1e-4)) << where;
            std::vector<float> dqkv(qkv.size(), std::numeric_limits<float>::quiet_NaN());
            std::vector<double> dqkv_r(qkv.size());
            kernels::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T, C, NH,
                                        NKV, mask, kernels::AttentionMath::Bf16);
            kernels::ref::attention_backward(dqkv_r.data(), convert<double>(dout).data(), out_r.data(), lse_r.data(),
                                             qkv_r.data(), B, T, C, NH, NKV, mask);
            // Q, K and V's gradients apart, so that one wrong part cannot hide under the others.
            for (int64_t part = 0; part < 3; part++) {
                const int64_t first = part == 0 ? 0 : C + (part - 1) * NKV * s.HS, width = part == 0 ? C : NKV * s.HS;
                std::vector<float> got;
                std::vector<double> want;
                for (int64_t n = 0; n < B * T; n++) {
                    got.insert(got.end(), dqkv.begin() + n * W + first, dqkv.begin() + n * W + first + width);
                    want.insert(want.end(), dqkv_r.begin() + n * W + first, dqkv_r.begin() + n * W + first + width);
                }
                EXPECT_TRUE(rms_close(got, want, 1e-2)) << where << " part " << "qkv"[part];
            }
        }
    }
}

TEST(AttentionTwin, Bf16KernelMatchesTwinOnRemainderShapes) {
    if (!kernels::attention_has_bf16_math()) {
        GTEST_SKIP() << "bf16 attention needs AVX512_BF16 and the avx512 kernel level; here Bf16 runs the fp32 kernel";
    }
    expect_bf16_kernel_matches_twin_on_remainder_shapes();
}

// The products on tiles (backend/amx_tiles.h), as an AMX CPU runs them, emulated on any CPU: whole
// tiles, and the pairs, rows and columns past them on vdpbf16ps.
TEST(AttentionTwin, Bf16KernelOnTilesMatchesTwinOnRemainderShapes) {
    if (!kernels::attention_has_bf16_math()) {
        GTEST_SKIP() << "bf16 attention needs AVX512_BF16 and the avx512 kernel level; here Bf16 runs the fp32 kernel";
    }
    backend::use_tile_unit(backend::TileUnit::Emulated);
    expect_bf16_kernel_matches_twin_on_remainder_shapes();
    backend::use_detected_tile_unit();
}

// The overloads for qkv kept in bf16 (mixed precision's saved activations): bit for bit
// what the fp32 overloads give on the same values widened, with bf16 math (which reads bf16
// either way) and with fp32 math (which widens them first), so no threshold applies.
TEST(AttentionTwin, Bf16StoredInputsGiveWhatTheirFp32ValuesGive) {
    struct Shape { int64_t B, T, NH, NKV, HS; };
    for (const Shape s : {Shape{1, 1, 1, 1, 1}, Shape{2, 13, 3, 3, 20}, Shape{1, 97, 4, 2, 17},
                          Shape{1, 70, 1, 1, 300}, Shape{2, 257, 2, 1, 33}}) {
        for (const bool padded : {false, true}) {
            for (const auto math : {kernels::AttentionMath::Fp32, kernels::AttentionMath::Bf16}) {
                const int64_t B = s.B, T = s.T, NH = s.NH, NKV = s.NKV, C = NH * s.HS, W = C + 2 * NKV * s.HS;
                std::vector<int32_t> key_len(B, static_cast<int32_t>(T));
                if (padded) key_len[0] = static_cast<int32_t>(std::max<int64_t>(1, T - 70));
                const kernels::AttentionMask mask{.causal = !padded, .key_len = padded ? key_len.data() : nullptr};
                const auto [qkv_h, qkv_wide] = round_to_bf16(random_vector(B * T * W, 17, 2.0f));
                const auto qkv = convert<float>(qkv_wide);
                const auto dout = random_vector(B * T * C, 18);
                std::vector<float> out(B * T * C), lse(B * NH * T), out_from_h(out.size()), lse_from_h(lse.size());
                kernels::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, NKV, mask, math);
                kernels::attention_forward(out_from_h.data(), lse_from_h.data(), qkv_h.data(), B, T, C, NH, NKV, mask,
                                           math);
                const std::string where = "T=" + std::to_string(T) + " HS=" + std::to_string(s.HS) +
                                          (padded ? " padded" : " causal") +
                                          (math == kernels::AttentionMath::Bf16 ? " bf16 math" : " fp32 math");
                EXPECT_EQ(out, out_from_h) << where;
                EXPECT_EQ(lse, lse_from_h) << where;
                std::vector<float> dqkv(qkv.size()), dqkv_from_h(qkv.size());
                kernels::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T, C, NH,
                                            NKV, mask, math);
                kernels::attention_backward(dqkv_from_h.data(), dout.data(), out.data(), lse.data(), qkv_h.data(), B,
                                            T, C, NH, NKV, mask, math);
                EXPECT_EQ(dqkv, dqkv_from_h) << where;
            }
        }
    }
}

}  // namespace
}  // namespace lmforge::test
