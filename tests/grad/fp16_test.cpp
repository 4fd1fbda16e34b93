// fp16 for train.precision = "fp16": the rounding kernel against IEEE half precision's own
// values (ties to even, the largest finite, overflow, subnormals, underflow, NaN) at every
// kernel level; and the GEMM that rounds its inputs equals the plain GEMM on inputs rounded
// beforehand, bit for bit, also for transposed and strided operands.
#include "kernels/fp16.h"

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "backend/gemm.h"
#include "core/fp16.h"
#include "gradcheck.h"
#include "model/fp16_gemm.h"

namespace lmforge::test {
namespace {

TEST(Fp16Rounding, GivesHalfPrecisionsOwnValues) {
    const float inf = std::numeric_limits<float>::infinity();
    struct Case {
        float in, want;
    };
    const std::vector<Case> cases = {
        {1.0f, 1.0f},
        {1.0f + 0x1p-11f, 1.0f},                   // a tie: to even
        {1.0f + 0x1p-11f + 0x1p-20f, 1.0f + 0x1p-10f},  // above the tie: up
        {1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-9f},     // a tie: to even, up
        {65504.0f, 65504.0f},                      // the largest finite
        {65519.0f, 65504.0f},                      // below the halfway point to 65536: down
        {65520.0f, inf},                           // from there on: overflow
        {-1e6f, -inf},
        {0x1p-24f, 0x1p-24f},                      // the smallest subnormal
        {3 * 0x1p-26f, 0x1p-24f},                  // 0.75 of it: up
        {0x1p-26f, 0.0f},                          // a quarter of it: underflow to 0
        {-0.0f, -0.0f},
    };
    for (const int64_t pad : {0, 13}) {  // also past the vector width, as a remainder
        std::vector<float> in(pad, 0.5f), out;
        for (const Case& c : cases) in.push_back(c.in);
        out.resize(in.size());
        kernels::round_to_fp16(out.data(), in.data(), static_cast<int64_t>(in.size()));
        for (size_t i = 0; i < cases.size(); i++) {
            EXPECT_EQ(out[pad + i], cases[i].want) << "in " << cases[i].in << ", pad " << pad;
            EXPECT_EQ(std::signbit(out[pad + i]), std::signbit(cases[i].want)) << "in " << cases[i].in;
        }
    }
    float nan = std::numeric_limits<float>::quiet_NaN(), out = 0;
    kernels::round_to_fp16(&out, &nan, 1);
    EXPECT_TRUE(std::isnan(out));
}

TEST(Fp16Rounding, BitsAreTheRoundedValues) {
    // to_fp16's bits, read back as IEEE half precision, are round_to_fp16's values.
    auto in = random_vector(77, 9, 1e5f);  // past the largest finite too, and past the vector width
    in.push_back(0x1p-26f);
    in.push_back(-0.0f);
    std::vector<float> rounded(in.size());
    std::vector<uint16_t> bits(in.size());
    kernels::round_to_fp16(rounded.data(), in.data(), static_cast<int64_t>(in.size()));
    kernels::to_fp16(bits.data(), in.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < in.size(); i++) {
        const float back = from_f16(bits[i]);
        EXPECT_EQ(back, rounded[i]) << "in " << in[i];
        EXPECT_EQ(std::signbit(back), std::signbit(rounded[i])) << "in " << in[i];
    }
}

// A GEMM that multiplies fp16 itself, as oneDNN's fp16 matmul does on CPUs with AVX512_FP16:
// here the naive GEMM on the fp16 values, so that the fp16 route is tested on every CPU.
class NaiveF16Gemm final : public backend::Gemm {
public:
    void run(const backend::GemmShape& s, const float* a, const float* b, float* c, const float* bias) override {
        naive_->run(s, a, b, c, bias);
    }
    void run_bf16(const backend::GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                  const float* bias) override {
        naive_->run_bf16(s, a, b, c, bias);
    }
    void run_bf16(const backend::GemmShape& s, const uint16_t* a, const uint16_t* b, uint16_t* c,
                  const float* bias) override {
        naive_->run_bf16(s, a, b, c, bias);
    }
    void run_f16(const backend::GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                 const float* bias) override {
        const auto widen = [](const uint16_t* x, int64_t n) {
            std::vector<float> w(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; i++) w[i] = from_f16(x[i]);
            return w;
        };
        const auto wa = widen(a, (s.trans_a ? s.K : s.M) * s.stored_lda());
        const auto wb = widen(b, (s.trans_b ? s.N : s.K) * s.stored_ldb());
        f16_calls++;
        naive_->run(s, wa.data(), wb.data(), c, bias);
    }
    std::string_view name() const override { return "naive, fp16 multiplied"; }
    bool native_f16() const override { return true; }

    int f16_calls = 0;

private:
    std::unique_ptr<backend::Gemm> naive_ = backend::make_gemm(backend::GemmKind::Naive);
};

// The rounding GEMM against the plain one on pre-rounded, tightly stored inputs, by both routes:
// the fp32 GEMM on rounded values, and a GEMM that multiplies fp16 itself.
TEST(Fp16InputGemm, EqualsThePlainGemmOnRoundedInputs) {
    const int64_t M = 7, N = 19, K = 33;
    for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
            for (const int64_t extra : {int64_t{0}, int64_t{5}}) {  // leading dimensions past the rows
                backend::GemmShape s{.M = M, .N = N, .K = K, .trans_a = ta, .trans_b = tb};
                const int64_t a_rows = ta ? K : M, a_cols = ta ? M : K, b_rows = tb ? N : K, b_cols = tb ? K : N;
                s.lda = a_cols + extra;
                s.ldb = b_cols + extra;
                const auto a = random_vector(a_rows * s.lda, 1, 300.0f), b = random_vector(b_rows * s.ldb, 2, 3.0f);
                std::vector<float> a16(a_rows * a_cols), b16(b_rows * b_cols);
                for (int64_t r = 0; r < a_rows; r++)
                    kernels::round_to_fp16(a16.data() + r * a_cols, a.data() + r * s.lda, a_cols);
                for (int64_t r = 0; r < b_rows; r++)
                    kernels::round_to_fp16(b16.data() + r * b_cols, b.data() + r * s.ldb, b_cols);
                std::vector<float> got(M * N), by_f16(M * N), want(M * N);
                Fp16InputGemm fp16(backend::make_gemm(backend::GemmKind::Naive));
                fp16.run(s, a.data(), b.data(), got.data());
                auto f16_inner = std::make_unique<NaiveF16Gemm>();
                const NaiveF16Gemm& inner = *f16_inner;
                Fp16InputGemm fp16_native(std::move(f16_inner));
                fp16_native.run(s, a.data(), b.data(), by_f16.data());
                backend::GemmShape tight = s;
                tight.lda = tight.ldb = 0;
                backend::make_gemm(backend::GemmKind::Naive)->run(tight, a16.data(), b16.data(), want.data());
                EXPECT_EQ(got, want) << "trans " << ta << tb << ", extra " << extra;
                EXPECT_EQ(by_f16, want) << "trans " << ta << tb << ", extra " << extra;
                EXPECT_EQ(inner.f16_calls, 1);
                EXPECT_NE(got, std::vector<float>(M * N, 0.0f));
            }
        }
    }
}

}  // namespace
}  // namespace lmforge::test
