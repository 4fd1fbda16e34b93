// backend/: oneDNN's GEMM against the naive one for every transposition, accumulation, bias
// and padded leading dimensions.
#include <gtest/gtest.h>

#include "backend/gemm.h"
#include "test_util.h"

namespace lmforge::test {
namespace {

TEST(Gemm, OnednnMatchesNaiveForEveryLayout) {
    auto fast = backend::make_gemm(backend::GemmKind::Onednn);
    auto slow = backend::make_gemm(backend::GemmKind::Naive);
    for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
            for (const bool acc : {false, true}) {
                for (const bool with_bias : {false, true}) {
                    const int64_t M = 19, N = 37, K = 29, pad = 3;
                    backend::GemmShape s{.M = M, .N = N, .K = K, .trans_a = ta, .trans_b = tb,
                                         .lda = (ta ? M : K) + pad, .ldb = (tb ? K : N) + pad,
                                         .ldc = N + pad, .accumulate = acc};
                    const auto a = random_vector((ta ? K : M) * s.lda, 1);
                    const auto b = random_vector((tb ? N : K) * s.ldb, 2);
                    const auto bias = random_vector(N, 3);
                    auto c1 = random_vector(M * s.ldc, 4);
                    auto c2 = c1;
                    fast->run(s, a.data(), b.data(), c1.data(), with_bias ? bias.data() : nullptr);
                    slow->run(s, a.data(), b.data(), c2.data(), with_bias ? bias.data() : nullptr);
                    EXPECT_TRUE(close(c1, c2, 1e-5, 1e-5))
                        << "ta=" << ta << " tb=" << tb << " acc=" << acc << " bias=" << with_bias;
                }
            }
        }
    }
}

TEST(Gemm, EmptyInnerDimensionLeavesBiasOrAccumulator) {
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    std::vector<float> c = {1.0f, 2.0f}, bias = {10.0f, 20.0f};
    gemm->run({.M = 1, .N = 2, .K = 0, .accumulate = true}, nullptr, nullptr, c.data(), bias.data());
    EXPECT_EQ(c, (std::vector<float>{11.0f, 22.0f}));
}

}  // namespace
}  // namespace lmforge::test
