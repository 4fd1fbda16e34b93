// model/lora: the adapters' backward against finite differences of their forward, with dropout
// (the masks redrawn in backward must be forward's), alone or two on one input, on slices of a
// wider, fused output, with the input's gradient written, added to or not wanted;
// and the masks themselves: the rate asked for, the same for the same (step, row) wherever the
// row lies, others at another step.
#include "model/lora.h"

#include <cmath>
#include <vector>

#include "gradcheck.h"

namespace lmforge::test {
namespace {

constexpr int64_t N = 6, IN = 5, R = 3, STRIDE = 11;
constexpr int64_t OUT[2] = {4, 3}, OFFSET[2] = {2, 7};

// One adapter, or two on one input (as q and k are), their outputs slices of rows STRIDE wide.
struct Case {
    std::unique_ptr<backend::Gemm> gemm = backend::make_gemm(backend::GemmKind::Naive);
    std::vector<float> x = random_vector(N * IN, 1);
    std::vector<float> A[2] = {random_vector(R * IN, 2), random_vector(R * IN, 3)};
    std::vector<float> B[2] = {random_vector(OUT[0] * R, 4), random_vector(OUT[1] * R, 5)};
    std::vector<float> dy = random_vector(N * STRIDE, 6);
    std::vector<uint64_t> keys;
    std::vector<float> du = std::vector<float>(N * kLoraGroupMax * R), scratch = std::vector<float>(N * IN);
    std::vector<float> dBt = std::vector<float>(R * OUT[0]), stacked = std::vector<float>(kLoraGroupMax * R * IN);
    std::vector<float> dA_stacked = std::vector<float>(kLoraGroupMax * R * IN);
    float dropout;
    int size;
    LoraAdapter adapters[2];

    Case(float p, int group) : dropout(p), size(group) {
        std::vector<int32_t> tokens(N);
        for (int64_t i = 0; i < N; i++) tokens[i] = static_cast<int32_t>(i % 4);
        keys.resize(N);
        lora_row_keys(keys.data(), 7, 3, tokens.data(), 2, N / 2);
    }
    LoraPass pass() {
        return {*gemm, Precision::Fp32, N, R, 1.5f, dropout, keys.data(),
                {du.data(), nullptr, scratch.data(), nullptr, dBt.data(), stacked.data(), nullptr, dA_stacked.data()}};
    }
    LoraGroup group(std::vector<float>* dA = nullptr, std::vector<float>* dB = nullptr) {
        LoraGroup g;
        for (int j = 0; j < size; j++) {
            LoraAdapter& a = adapters[j];
            a.A = A[j].data();
            a.B = B[j].data();
            a.dA = dA != nullptr ? dA[j].data() : nullptr;
            a.dB = dB != nullptr ? dB[j].data() : nullptr;
            a.in = IN;
            a.out = OUT[j];
            a.offset = OFFSET[j];
            a.stride = STRIDE;
            a.salt = 99 + j;
            g.add(a);
        }
        return g;
    }
    // Σ dy ∘ y, y = the adapters' outputs alone.
    double loss() {
        std::vector<float> y(N * STRIDE, 0.0f), us(N * size * R);
        lora_forward(pass(), group(), y.data(), x.data(), nullptr, us.data());
        double s = 0;
        for (int64_t i = 0; i < N * STRIDE; i++) s += static_cast<double>(y[i]) * dy[i];
        return s;
    }
};

void expect_gradient(Case& c, std::vector<float>& param, const std::vector<float>& grad, const char* what) {
    // The output is linear in each of x, A and B, so central differences are exact but for rounding.
    const float h = 1e-2f;
    double scale = 0;
    for (float g : grad) scale = std::max(scale, std::abs(static_cast<double>(g)));
    for (size_t i = 0; i < param.size(); i++) {
        const float keep = param[i];
        param[i] = keep + h;
        const double up = c.loss();
        param[i] = keep - h;
        const double down = c.loss();
        param[i] = keep;
        EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-3 * scale) << what << " element " << i;
    }
}

// (dropout, adapters in the group, whether dx is added to rather than written)
class LoraGrad : public ::testing::TestWithParam<std::tuple<float, int, bool>> {};

TEST_P(LoraGrad, BackwardMatchesFiniteDifferences) {
    const auto [dropout, size, add_to_dx] = GetParam();
    Case c(dropout, size);
    std::vector<float> dA[2] = {std::vector<float>(R * IN, 0.0f), std::vector<float>(R * IN, 0.0f)};
    std::vector<float> dB[2] = {std::vector<float>(OUT[0] * R, 0.0f), std::vector<float>(OUT[1] * R, 0.0f)};
    std::vector<float> y(N * STRIDE, 0.0f), us(N * size * R);
    lora_forward(c.pass(), c.group(), y.data(), c.x.data(), nullptr, us.data());
    // Columns outside the adapters' slices are not written.
    for (int64_t n = 0; n < N; n++) {
        for (int64_t j = 0; j < STRIDE; j++) {
            bool inside = false;
            for (int a = 0; a < size; a++) inside = inside || (j >= OFFSET[a] && j < OFFSET[a] + OUT[a]);
            if (!inside) {
                EXPECT_EQ(y[n * STRIDE + j], 0.0f);
            }
        }
    }
    // What dx held before: kept under the gradient when added to, gone when written.
    const std::vector<float> before = random_vector(N * IN, 8);
    std::vector<float> dx = before;
    lora_backward(c.pass(), c.group(dA, dB), dx.data(), add_to_dx, c.dy.data(), nullptr, c.x.data(), nullptr,
                  us.data());
    if (add_to_dx) {
        for (int64_t i = 0; i < N * IN; i++) dx[i] -= before[i];
    }
    for (int a = 0; a < size; a++) {
        expect_gradient(c, c.A[a], dA[a], a == 0 ? "dA of the first" : "dA of the second");
        expect_gradient(c, c.B[a], dB[a], a == 0 ? "dB of the first" : "dB of the second");
    }
    expect_gradient(c, c.x, dx, "dx");
    // No dx wanted: the adapters' gradients all the same.
    std::vector<float> dA_alone[2] = {std::vector<float>(R * IN, 0.0f), std::vector<float>(R * IN, 0.0f)};
    std::vector<float> dB_alone[2] = {std::vector<float>(OUT[0] * R, 0.0f), std::vector<float>(OUT[1] * R, 0.0f)};
    lora_backward(c.pass(), c.group(dA_alone, dB_alone), nullptr, false, c.dy.data(), nullptr, c.x.data(), nullptr,
                  us.data());
    for (int a = 0; a < size; a++) {
        EXPECT_EQ(dA_alone[a], dA[a]);
        EXPECT_EQ(dB_alone[a], dB[a]);
    }
}

INSTANTIATE_TEST_SUITE_P(DropoutGroupAdd, LoraGrad,
                         ::testing::Combine(::testing::Values(0.0f, 0.3f), ::testing::Values(1, 2),
                                            ::testing::Bool()));

TEST(LoraDropout, MasksFollowTheStepAndTheRowNotWhereItLies) {
    const int64_t T = 64;
    std::vector<int32_t> two_rows(2 * T), swapped(2 * T);
    for (int64_t t = 0; t < T; t++) {
        two_rows[t] = swapped[T + t] = static_cast<int32_t>(t % 7);
        two_rows[T + t] = swapped[t] = static_cast<int32_t>(t % 5);
    }
    std::vector<uint64_t> a(2 * T), b(2 * T), later(2 * T);
    lora_row_keys(a.data(), 1, 10, two_rows.data(), 2, T);
    lora_row_keys(b.data(), 1, 10, swapped.data(), 2, T);
    lora_row_keys(later.data(), 1, 11, two_rows.data(), 2, T);
    for (int64_t t = 0; t < T; t++) {
        EXPECT_EQ(a[t], b[T + t]);  // the same row, another place in the batch
        EXPECT_NE(a[t], later[t]);  // the next step draws anew
    }
    // The rate: dropout 0.25 of 64·64 inputs of ones zeroes about a quarter.
    auto gemm = backend::make_gemm(backend::GemmKind::Naive);
    const int64_t C = 64;
    std::vector<float> x(T * C, 1.0f), A(C, 1.0f), B(1, 1.0f), y(T, 0.0f), us(T), du(T), scratch(T * C);
    LoraAdapter ad;
    ad.A = A.data();
    ad.B = B.data();
    ad.in = C;
    ad.out = 1;
    ad.stride = 1;
    const LoraPass pass{*gemm, Precision::Fp32, T, 1, 1.0f, 0.25f, a.data(), {du.data(), nullptr, scratch.data(), nullptr}};
    LoraGroup g;
    g.add(ad);
    lora_forward(pass, g, y.data(), x.data(), nullptr, us.data());
    int64_t zeros = 0;
    for (float v : scratch) zeros += v == 0.0f;
    EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(T * C), 0.25, 0.03);
}

}  // namespace
}  // namespace lmforge::test
