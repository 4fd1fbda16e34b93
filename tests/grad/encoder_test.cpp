// Token + position embedding, and the token embedding alone: finite differences on the twin;
// kernel against twin.
#include "kernels/encoder.h"

#include <tuple>

#include "gradcheck.h"
#include "kernels/ref/encoder.h"

namespace lmforge::test {
namespace {

std::vector<int32_t> ids(int64_t n, int64_t V, uint64_t seed) {
    Rng rng(seed);
    std::vector<int32_t> x(n);
    for (auto& v : x) v = static_cast<int32_t>(rng.below(V));
    return x;
}

TEST(EncoderGrad, FiniteDifferences) {
    const int64_t B = 2, T = 3, C = 5, V = 4;  // 6 positions over 4 ids: some repeat
    const auto inp = ids(B * T, V, 1);
    auto wte = random_vector<double>(V * C, 2), wpe = random_vector<double>(T * C, 3);
    const auto dout = random_vector<double>(B * T * C, 4);
    std::vector<double> dwte(V * C), dwpe(T * C);
    kernels::ref::encoder_backward(dwte.data(), dwpe.data(), dout.data(), inp.data(), B, T, C);
    const auto loss = [&] {
        std::vector<double> out(B * T * C);
        kernels::ref::encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
        return dot(out, dout);
    };
    expect_matches_finite_differences({{"wte", &wte, &dwte}, {"wpe", &wpe, &dwpe}}, loss);
}

TEST(EncoderTwin, KernelMatchesTwinOnRemainderShapes) {
    struct Shape { int64_t B, T, C, V; };
    for (const Shape s : {Shape{1, 1, 1, 1}, Shape{3, 13, 37, 11}, Shape{2, 64, 48, 101}}) {
        const auto inp = ids(s.B * s.T, s.V, 5);
        const auto wte = random_vector(s.V * s.C, 6), wpe = random_vector(s.T * s.C, 7);
        const auto dout = random_vector(s.B * s.T * s.C, 8);
        std::vector<float> out(s.B * s.T * s.C);
        std::vector<double> out_ref(out.size());
        kernels::encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), s.B, s.T, s.C);
        kernels::ref::encoder_forward(out_ref.data(), inp.data(), convert<double>(wte).data(),
                                      convert<double>(wpe).data(), s.B, s.T, s.C);
        EXPECT_TRUE(close(out, out_ref, kTwinRtol, kTwinAtol));
        // Backward accumulates: start both from the same non-zero gradients.
        auto dwte = random_vector(s.V * s.C, 9), dwpe = random_vector(s.T * s.C, 10);
        auto dwte_ref = convert<double>(dwte), dwpe_ref = convert<double>(dwpe);
        kernels::encoder_backward(dwte.data(), dwpe.data(), dout.data(), inp.data(), s.B, s.T, s.C);
        kernels::ref::encoder_backward(dwte_ref.data(), dwpe_ref.data(),
                                       convert<double>(dout).data(), inp.data(), s.B, s.T, s.C);
        EXPECT_TRUE(close(dwte, dwte_ref, kTwinRtol, kTwinAtol));
        EXPECT_TRUE(close(dwpe, dwpe_ref, kTwinRtol, kTwinAtol));
    }
}

TEST(TokenEmbeddingGrad, FiniteDifferences) {
    const int64_t N = 6, C = 5, V = 4;  // ids repeat
    const auto inp = ids(N, V, 11);
    auto wte = random_vector<double>(V * C, 12);
    const auto dout = random_vector<double>(N * C, 13);
    std::vector<double> dwte(V * C);
    kernels::ref::token_embedding_backward(dwte.data(), dout.data(), inp.data(), N, C);
    const auto loss = [&] {
        std::vector<double> out(N * C);
        kernels::ref::token_embedding_forward(out.data(), inp.data(), wte.data(), N, C);
        return dot(out, dout);
    };
    expect_matches_finite_differences({{"wte", &wte, &dwte}}, loss);
}

TEST(TokenEmbeddingTwin, KernelMatchesTwinOnRemainderShapes) {
    for (const auto& [N, C, V] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {39, 37, 11}, {128, 48, 101}}) {
        const auto inp = ids(N, V, 14);
        const auto wte = random_vector(V * C, 15), dout = random_vector(N * C, 16);
        std::vector<float> out(N * C);
        std::vector<double> out_ref(out.size());
        kernels::token_embedding_forward(out.data(), inp.data(), wte.data(), N, C);
        kernels::ref::token_embedding_forward(out_ref.data(), inp.data(), convert<double>(wte).data(), N, C);
        EXPECT_TRUE(close(out, out_ref, kTwinRtol, kTwinAtol));
        auto dwte = random_vector(V * C, 17);
        auto dwte_ref = convert<double>(dwte);
        kernels::token_embedding_backward(dwte.data(), dout.data(), inp.data(), N, C);
        kernels::ref::token_embedding_backward(dwte_ref.data(), convert<double>(dout).data(), inp.data(), N, C);
        EXPECT_TRUE(close(dwte, dwte_ref, kTwinRtol, kTwinAtol));
    }
}

TEST(TokenEmbedding, Bf16GradientsAddEachTokensFp32SumOnce) {
    // Into bf16 gradients, a token's rows are summed as the fp32 kernel sums them (from zero,
    // in position order) and added once: bit for bit that rounded sum. Few tokens, many repeats;
    // the positions of GPT-2's encoder take their fp32 sums as ever.
    const int64_t B = 3, T = 43, N = B * T, C = 37, V = 5;
    const auto inp = ids(N, V, 18);
    const auto dout = random_vector(N * C, 19), start = random_vector(V * C, 20), wpe_start = random_vector(T * C, 21);
    std::vector<bf16> dwte(V * C);
    for (int64_t i = 0; i < V * C; i++) dwte[i] = to_bf16(start[i]);
    std::vector<float> sums(V * C), dwpe = wpe_start, dwpe_fp32 = wpe_start, unused(V * C);
    kernels::token_embedding_backward(sums.data(), dout.data(), inp.data(), N, C);
    kernels::encoder_backward(unused.data(), dwpe_fp32.data(), dout.data(), inp.data(), B, T, C);
    std::vector<bf16> want(V * C);
    for (int64_t i = 0; i < V * C; i++) want[i] = to_bf16(from_bf16(dwte[i]) + sums[i]);
    kernels::encoder_backward(dwte.data(), dwpe.data(), dout.data(), inp.data(), B, T, C);
    EXPECT_EQ(dwte, want);
    EXPECT_EQ(dwpe, dwpe_fp32);
}

}  // namespace
}  // namespace lmforge::test
