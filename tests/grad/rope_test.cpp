// Rotary embeddings: finite differences on the twin; kernel against twin on remainder shapes;
// frequencies and cos/sin tables against transformers' own (tests/fixtures/rope_llama3.safetensors,
// tools/make_rope_fixture.py).
#include "kernels/rope.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/file_io.h"
#include "gradcheck.h"
#include "io/safetensors.h"
#include "kernels/ref/rope.h"

namespace lmforge::test {
namespace {

// Distance in units in the last place between two floats of the same sign.
int64_t ulps(float a, float b) {
    return std::abs(int64_t{std::bit_cast<int32_t>(a)} - int64_t{std::bit_cast<int32_t>(b)});
}

struct RopeShape {
    int64_t B, T, heads, HS, stride;
};

std::string describe(const RopeShape& s) {
    return "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " heads=" + std::to_string(s.heads) +
           " HS=" + std::to_string(s.HS) + " stride=" + std::to_string(s.stride);
}

// Rows of `stride` channels with `heads` heads rotated and the rest passed through: the loss
// Σ dout ⊙ rope(x) covers both, and the gradient of the rest is dout itself.
TEST(RopeGrad, FiniteDifferences) {
    const RopeShape s{2, 3, 2, 6, 2 * 6 + 3};
    const int64_t h = s.HS / 2;
    std::vector<double> inv_freq(h), cos(s.T * h), sin(s.T * h);
    const kernels::Llama3RopeScaling scaling{.factor = 8, .original_max_position = 16};
    kernels::ref::rope_inv_freq(inv_freq.data(), s.HS, 10000.0, &scaling);
    kernels::ref::rope_tables(cos.data(), sin.data(), inv_freq.data(), s.HS, 5, s.T);
    auto x = random_vector<double>(s.B * s.T * s.stride, 1, 2.0f);
    const auto dout = random_vector<double>(x.size(), 2);
    auto dx = dout;
    kernels::ref::rope_backward(dx.data(), cos.data(), sin.data(), s.B, s.T, s.stride, s.heads, s.HS);
    const auto loss = [&] {
        auto y = x;
        kernels::ref::rope_forward(y.data(), cos.data(), sin.data(), s.B, s.T, s.stride, s.heads, s.HS);
        return dot(y, dout);
    };
    expect_matches_finite_differences({{"x", &x, &dx}}, loss);
}

// The twin against the definition on one pair: channel 0 pairs with channel h = 1.
TEST(RopeGrad, TwinRotatesChannelIWithIPlusHalf) {
    const double angle = 0.3;
    const std::vector<double> cos = {std::cos(angle), 1.0}, sin = {std::sin(angle), 0.0};
    std::vector<double> x = {1.0, 2.0, 3.0, 4.0};  // HS = 4: pairs (0, 2) and (1, 3)
    kernels::ref::rope_forward(x.data(), cos.data(), sin.data(), 1, 1, 4, 1, 4);
    const std::vector<double> want = {1.0 * cos[0] - 3.0 * sin[0], 2.0, 3.0 * cos[0] + 1.0 * sin[0], 4.0};
    EXPECT_TRUE(close(x, want, 1e-15, 0.0));
}

// Tables: the kernel's against the twin's in float, from the same frequencies (the same fp32
// angle; cos and sin within an ulp). Rotation: the kernel in fp32 against the twin in double
// on those tables, a few ulp of the terms |x| ~ 8; what lies beyond the rotated heads is left
// exactly as it was. Backward likewise.
TEST(RopeTwin, KernelMatchesTwinOnRemainderShapes) {
    const kernels::Llama3RopeScaling scaling{};
    for (const RopeShape s : {RopeShape{1, 1, 1, 2, 2}, RopeShape{2, 5, 3, 34, 3 * 34 + 7},
                              RopeShape{3, 7, 4, 64, 4 * 64}, RopeShape{1, 19, 6, 128, 9 * 128 + 1}}) {
        const int64_t h = s.HS / 2, n = s.B * s.T * s.stride;
        std::vector<float> inv_freq(h), cos(s.T * h), sin(s.T * h), cos_f(s.T * h), sin_f(s.T * h);
        kernels::rope_inv_freq(inv_freq.data(), s.HS, 500000.0, &scaling);
        kernels::rope_tables(cos.data(), sin.data(), inv_freq.data(), s.HS, 8000, s.T);
        kernels::ref::rope_tables(cos_f.data(), sin_f.data(), inv_freq.data(), s.HS, 8000, s.T);
        EXPECT_TRUE(close(cos, cos_f, 0.0, 1.2e-7)) << describe(s);
        EXPECT_TRUE(close(sin, sin_f, 0.0, 1.2e-7)) << describe(s);
        const auto cos_r = convert<double>(cos), sin_r = convert<double>(sin);
        for (const bool backward : {false, true}) {
            const auto x0 = random_vector(n, backward ? 2 : 1, 2.0f);
            auto x = x0;
            auto x_r = convert<double>(x0);
            if (backward) {
                kernels::rope_backward(x.data(), cos.data(), sin.data(), s.B, s.T, s.stride, s.heads, s.HS);
                kernels::ref::rope_backward(x_r.data(), cos_r.data(), sin_r.data(), s.B, s.T, s.stride, s.heads,
                                            s.HS);
            } else {
                kernels::rope_forward(x.data(), cos.data(), sin.data(), s.B, s.T, s.stride, s.heads, s.HS);
                kernels::ref::rope_forward(x_r.data(), cos_r.data(), sin_r.data(), s.B, s.T, s.stride, s.heads,
                                           s.HS);
            }
            EXPECT_TRUE(close(x, x_r, 1e-6, 2e-6)) << describe(s) << (backward ? " backward" : " forward");
            for (int64_t r = 0; r < s.B * s.T; r++) {
                for (int64_t c = s.heads * s.HS; c < s.stride; c++) {
                    ASSERT_EQ(x[r * s.stride + c], x0[r * s.stride + c]) << describe(s) << " row " << r;
                }
            }
        }
    }
}

// Backward is the transpose of a rotation, its inverse: it undoes forward, to rounding.
// Position 0 rotates by nothing: cos 1 and sin 0 exactly, and x comes back bit for bit.
TEST(RopeTwin, BackwardUndoesForwardAndPositionZeroIsIdentity) {
    const RopeShape s{2, 9, 5, 48, 5 * 48};
    const int64_t h = s.HS / 2, n = s.B * s.T * s.stride;
    std::vector<float> inv_freq(h), cos(s.T * h), sin(s.T * h);
    kernels::rope_inv_freq(inv_freq.data(), s.HS, 10000.0, nullptr);
    kernels::rope_tables(cos.data(), sin.data(), inv_freq.data(), s.HS, 0, s.T);
    for (int64_t i = 0; i < h; i++) {
        EXPECT_EQ(cos[i], 1.0f);
        EXPECT_EQ(sin[i], 0.0f);
    }
    const auto x0 = random_vector(n, 3, 2.0f);
    auto x = x0;
    kernels::rope_forward(x.data(), cos.data(), sin.data(), 1, 1, s.stride, s.heads, s.HS);
    EXPECT_EQ(x, x0);
    kernels::rope_forward(x.data(), cos.data(), sin.data(), s.B, s.T, s.stride, s.heads, s.HS);
    EXPECT_FALSE(close(x, x0, 0.0, 1e-3));
    kernels::rope_backward(x.data(), cos.data(), sin.data(), s.B, s.T, s.stride, s.heads, s.HS);
    EXPECT_TRUE(close(x, x0, 0.0, 2e-6));
}

// The bf16 form (mixed precision's kept qkv) is the in-place fp32 rotation rounded once, the
// channels past the rotated heads (v's) copied and rounded; its input is left alone.
TEST(RopeTwin, Bf16OutputIsTheRoundedInPlaceRotation) {
    const RopeShape s{2, 9, 5, 48, 5 * 48 + 2 * 48};
    const int64_t h = s.HS / 2, n = s.B * s.T * s.stride;
    std::vector<float> inv_freq(h), cos(s.T * h), sin(s.T * h);
    kernels::rope_inv_freq(inv_freq.data(), s.HS, 10000.0, nullptr);
    kernels::rope_tables(cos.data(), sin.data(), inv_freq.data(), s.HS, 0, s.T);
    const auto x0 = random_vector(n, 4, 2.0f);
    auto rotated = x0;
    kernels::rope_forward(rotated.data(), cos.data(), sin.data(), s.B, s.T, s.stride, s.heads, s.HS);
    std::vector<bf16> want(n), got(n, 0xFFFF);
    kernels::to_bf16(want.data(), rotated.data(), n);
    const auto x = x0;
    kernels::rope_forward(got.data(), x.data(), cos.data(), sin.data(), s.B, s.T, s.stride, s.heads, s.HS);
    EXPECT_EQ(got, want);
    EXPECT_EQ(x, x0);
}

// transformers' own numbers: LlamaRotaryEmbedding's inv_freq, plain and with Llama 3's
// scaling, and its cos/sin tables at positions up to 131071.
class RopeTransformers : public ::testing::Test {
protected:
    struct Case {
        std::string name;
        int64_t HS;
        double theta;
        std::optional<kernels::Llama3RopeScaling> scaling;
    };

    RopeTransformers() {
        for (const auto& c : meta_.at("cases")) {
            Case k{c.at("name"), c.at("HS"), c.at("theta"), std::nullopt};
            if (!c.at("scaling").is_null()) {
                const auto& s = c.at("scaling");
                k.scaling = kernels::Llama3RopeScaling{s.at("factor"), s.at("low_freq_factor"),
                                                       s.at("high_freq_factor"),
                                                       s.at("original_max_position_embeddings")};
            }
            cases_.push_back(k);
        }
    }

    const Case& find(const std::string& name) const {
        for (const Case& c : cases_) {
            if (c.name == name) return c;
        }
        throw std::runtime_error("no case " + name);
    }

    static std::vector<float> inv_freq(const Case& c) {
        std::vector<float> f(c.HS / 2);
        kernels::rope_inv_freq(f.data(), c.HS, c.theta, c.scaling ? &*c.scaling : nullptr);
        return f;
    }

    SafetensorsReader file_{std::string(LMFORGE_FIXTURES_DIR) + "/rope_llama3.safetensors"};
    nlohmann::json meta_ = nlohmann::json::parse(file_.metadata().at("meta"));
    std::vector<Case> cases_;
};

// Within an ulp of transformers (bit for bit where torch's fp32 pow is correctly rounded, which
// is nearly everywhere); the double twin, which rounds nothing on the way, within 1e-6 relative
// where HS is a power of two (its 2i/HS is exact in fp32 too) and 4e-6 at HS = 96.
TEST_F(RopeTransformers, InvFreqMatchesTransformers) {
    ASSERT_EQ(cases_.size(), 15u);
    for (const Case& c : cases_) {
        const auto want = file_.read_f32("inv_freq/" + c.name);
        const auto got = inv_freq(c);
        ASSERT_EQ(got.size(), want.size()) << c.name;
        int64_t worst = 0;
        for (size_t i = 0; i < got.size(); i++) worst = std::max(worst, ulps(got[i], want[i]));
        EXPECT_LE(worst, 1) << c.name;
        std::vector<double> twin(c.HS / 2);
        kernels::ref::rope_inv_freq(twin.data(), c.HS, c.theta, c.scaling ? &*c.scaling : nullptr);
        EXPECT_TRUE(close(want, twin, std::has_single_bit(uint64_t(c.HS)) ? 1e-6 : 4e-6, 0.0)) << c.name;
    }
}

// The tables from those frequencies: the same fp32 angle, whose cosine and sine torch and the
// kernel each round within an ulp. At position 131071 an ulp of a frequency would move the
// angle by up to 1e-3 rad: this holds only because the frequencies are transformers' own.
TEST_F(RopeTransformers, TablesMatchTransformers) {
    const auto& tables = meta_.at("tables");
    ASSERT_EQ(tables.size(), 4u);
    for (const auto& t : tables) {
        const Case& c = find(t.at("case"));
        const int64_t pos0 = t.at("pos0"), T = t.at("T"), h = c.HS / 2;
        const auto f = inv_freq(c);
        std::vector<float> cos(T * h), sin(T * h);
        kernels::rope_tables(cos.data(), sin.data(), f.data(), c.HS, pos0, T);
        const std::string at = c.name + "/" + std::to_string(pos0);
        EXPECT_TRUE(close(cos, file_.read_f32("cos/" + at), 0.0, 1.2e-7)) << at;
        EXPECT_TRUE(close(sin, file_.read_f32("sin/" + at), 0.0, 1.2e-7)) << at;
    }
}

// The Llama model fixtures' own frequencies (tests/fixtures/hf/llama-*, tools/make_llama_fixtures.py),
// from each model's config.json: without scaling, and with llama3 scaling whose bands the
// small original_max of llama-mha puts every frequency of head_dim 8 in.
TEST(RopeLlamaFixtures, InvFreqMatchesTheModelsOwn) {
    const std::string hf = std::string(LMFORGE_FIXTURES_DIR) + "/hf";
    const SafetensorsReader expected(hf + "/llama-expected.safetensors");
    for (const std::string model : {"llama-gqa", "llama-tied", "llama-mha"}) {
        const auto config = nlohmann::json::parse(read_text_file(hf + "/" + model + "/config.json"));
        const auto& rope = config.at("rope_parameters");
        const int64_t HS = config.at("head_dim");
        std::optional<kernels::Llama3RopeScaling> scaling;
        if (rope.at("rope_type") == "llama3") {
            scaling = kernels::Llama3RopeScaling{rope.at("factor"), rope.at("low_freq_factor"),
                                                 rope.at("high_freq_factor"),
                                                 rope.at("original_max_position_embeddings")};
        }
        std::vector<float> got(HS / 2);
        kernels::rope_inv_freq(got.data(), HS, rope.at("rope_theta"), scaling ? &*scaling : nullptr);
        const auto want = expected.read_f32(model + "/rope_inv_freq");
        ASSERT_EQ(got.size(), want.size()) << model;
        for (size_t i = 0; i < got.size(); i++) EXPECT_LE(ulps(got[i], want[i]), 1) << model << " [" << i << "]";
    }
}

}  // namespace
}  // namespace lmforge::test
