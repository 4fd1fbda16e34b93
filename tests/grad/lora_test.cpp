// model/lora: the adapter's backward against finite differences of its forward, with dropout
// (the masks redrawn in backward must be forward's) and on a slice of a wider, fused output;
// and the masks themselves: the rate asked for, the same for the same (step, row) wherever the
// row lies, others at another step.
#include "model/lora.h"

#include <cmath>
#include <vector>

#include "gradcheck.h"

namespace lmforge::test {
namespace {

constexpr int64_t N = 6, IN = 5, OUT = 4, R = 3, STRIDE = 9, OFFSET = 2;

struct Case {
    std::unique_ptr<backend::Gemm> gemm = backend::make_gemm(backend::GemmKind::Naive);
    std::vector<float> x = random_vector(N * IN, 1), A = random_vector(R * IN, 2), B = random_vector(OUT * R, 3);
    std::vector<float> dy = random_vector(N * STRIDE, 4);
    std::vector<uint64_t> keys;
    std::vector<float> du = std::vector<float>(N * R), scratch = std::vector<float>(N * IN), dBt = std::vector<float>(R * OUT);
    float dropout;

    explicit Case(float p) : dropout(p) {
        std::vector<int32_t> tokens(N);
        for (int64_t i = 0; i < N; i++) tokens[i] = static_cast<int32_t>(i % 4);
        keys.resize(N);
        lora_row_keys(keys.data(), 7, 3, tokens.data(), 2, N / 2);
    }
    LoraPass pass() {
        return {*gemm, Precision::Fp32, N, R, 1.5f, dropout, keys.data(), {du.data(), nullptr, scratch.data(), nullptr, dBt.data()}};
    }
    LoraAdapter adapter(float* dA = nullptr, float* dB = nullptr) {
        LoraAdapter a;
        a.A = A.data();
        a.B = B.data();
        a.dA = dA;
        a.dB = dB;
        a.in = IN;
        a.out = OUT;
        a.offset = OFFSET;
        a.stride = STRIDE;
        a.salt = 99;
        return a;
    }
    // Σ dy ∘ y over the adapter's columns, y = the adapter's output alone.
    double loss() {
        std::vector<float> y(N * STRIDE, 0.0f), us(N * R);
        lora_forward(pass(), adapter(), y.data(), x.data(), nullptr, us.data());
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

class LoraGrad : public ::testing::TestWithParam<float> {};

TEST_P(LoraGrad, BackwardMatchesFiniteDifferences) {
    Case c(GetParam());
    std::vector<float> dA(R * IN, 0.0f), dB(OUT * R, 0.0f), dx(N * IN, 0.0f), y(N * STRIDE, 0.0f), us(N * R);
    lora_forward(c.pass(), c.adapter(), y.data(), c.x.data(), nullptr, us.data());
    // Columns outside the adapter's slice are not written.
    for (int64_t n = 0; n < N; n++) {
        for (int64_t j = 0; j < STRIDE; j++) {
            if (j < OFFSET || j >= OFFSET + OUT) {
                EXPECT_EQ(y[n * STRIDE + j], 0.0f);
            }
        }
    }
    lora_backward(c.pass(), c.adapter(dA.data(), dB.data()), dx.data(), c.dy.data(), nullptr, c.x.data(), nullptr,
                  us.data());
    expect_gradient(c, c.A, dA, "dA");
    expect_gradient(c, c.B, dB, "dB");
    expect_gradient(c, c.x, dx, "dx");
}

INSTANTIATE_TEST_SUITE_P(Dropout, LoraGrad, ::testing::Values(0.0f, 0.3f));

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
    lora_forward(pass, ad, y.data(), x.data(), nullptr, us.data());
    int64_t zeros = 0;
    for (float v : scratch) zeros += v == 0.0f;
    EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(T * C), 0.25, 0.03);
}

}  // namespace
}  // namespace lmforge::test
