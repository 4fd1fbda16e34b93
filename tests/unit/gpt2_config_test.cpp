// model/: presets, validation messages, the parameter table and its Hugging Face names, the
// precision a run picks.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "model/gpt2_config.h"
#include "model/gpt2_params.h"
#include "model/precision.h"

namespace lmforge {
namespace {

TEST(Gpt2Config, PresetsHaveGpt2Shapes) {
    const Gpt2Config c = Gpt2Config::preset("gpt2");
    EXPECT_EQ(c.n_layer, 12);
    EXPECT_EQ(c.n_embd, 768);
    EXPECT_EQ(c.padded_vocab(), 50304);
    EXPECT_EQ(Gpt2Config::preset("gpt2-xl").n_head, 25);
    for (const auto& name : Gpt2Config::preset_names()) {
        EXPECT_NO_THROW(Gpt2Config::preset(name).validate()) << name;
    }
}

TEST(Gpt2Config, BadShapesNameTheFieldAndValue) {
    const auto message = [](Gpt2Config c) {
        try {
            c.validate();
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    Gpt2Config c;
    c.n_head = 5;
    EXPECT_EQ(message(c), "n_embd = 768 is not divisible by n_head = 5");
    c = Gpt2Config{};
    c.n_layer = 0;
    EXPECT_EQ(message(c), "n_layer = 0 must be a positive integer");
    c = Gpt2Config{};
    c.vocab_size = -3;
    EXPECT_EQ(message(c), "vocab_size = -3 must be a positive integer");
    // A damaged file's sizes (2^62, 2^40) are refused by the parameter count, a classifier's
    // labels included: 2^40 of them were taken, and their head's allocation failed.
    const auto too_large = [&](const Gpt2Config& big) {
        return message(big).rfind("the model would hold", 0) == 0;
    };
    c = Gpt2Config{};
    c.n_embd = c.n_head = int64_t{1} << 62;
    EXPECT_TRUE(too_large(c)) << message(c);
    c = Gpt2Config{};
    c.n_layer = int64_t{1} << 40;
    EXPECT_TRUE(too_large(c)) << message(c);
    c = Gpt2Config{};
    c.num_labels = int64_t{1} << 40;
    EXPECT_EQ(message(c), "the model would hold 8.44e+14 parameters, more than the 6.87e+10 lmforge allows");
    try {
        Gpt2Config::preset("gpt3");
        FAIL();
    } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()), "unknown model preset 'gpt3'");
        EXPECT_NE(e.hint().find("gpt2-medium"), std::string::npos);
    }
}

TEST(Gpt2Params, CountsMatchGpt2AndPaddingIsNotCounted) {
    const ParamLayout layout = gpt2_param_layout(Gpt2Config::preset("gpt2"));
    EXPECT_EQ(layout.count(), 124'439'808);  // GPT-2 small, without vocabulary padding
    EXPECT_EQ(layout.specs().size(), 2u + 12u * 12u + 2u);
    const ParamSpec& wte = layout.find("wte.weight");
    EXPECT_EQ(wte.shape, (std::vector<int64_t>{50257, 768}));
    EXPECT_EQ(wte.reserved, 50304 * 768);
    EXPECT_EQ(layout.find("h.11.attn.c_attn.weight").shape, (std::vector<int64_t>{768, 2304}));
    EXPECT_EQ(layout.find("h.0.mlp.c_proj.weight").shape, (std::vector<int64_t>{3072, 768}));
    EXPECT_FALSE(layout.find("h.3.ln_2.bias").decay);
    EXPECT_TRUE(layout.find("wpe.weight").decay);
    for (const ParamSpec& s : layout.specs()) {
        EXPECT_EQ(s.offset % 16, 0) << s.name;  // 64-byte aligned
    }
    EXPECT_EQ(gpt2_param_layout(Gpt2Config::preset("gpt2-medium")).count(), 354'823'168);
}

TEST(Gpt2Params, InitFollowsGpt2) {
    Gpt2Config c{2, 2, 32, 70, 16};
    const ParamLayout layout = gpt2_param_layout(c);
    std::vector<float> buf(layout.total(), -1.0f);
    Rng rng(0);
    init_gpt2_params(c, layout, buf.data(), rng);
    const auto values = [&](const std::string& name) {
        const ParamSpec& s = layout.find(name);
        return std::vector<float>(buf.begin() + s.offset, buf.begin() + s.offset + s.reserved);
    };
    for (float x : values("h.1.ln_1.weight")) EXPECT_EQ(x, 1.0f);
    for (float x : values("h.1.attn.c_attn.bias")) EXPECT_EQ(x, 0.0f);
    const auto wte = values("wte.weight");
    for (size_t i = 70 * 32; i < wte.size(); i++) EXPECT_EQ(wte[i], 0.0f) << "padding row";
    const auto stddev = [](const std::vector<float>& x) {
        double s = 0;
        for (float v : x) s += v * v;
        return std::sqrt(s / x.size());
    };
    EXPECT_NEAR(stddev(values("h.0.mlp.c_fc.weight")), 0.02, 0.002);
    EXPECT_NEAR(stddev(values("h.0.mlp.c_proj.weight")), 0.02 / 2.0, 0.001);  // 1/sqrt(2·2)
}

}  // namespace
}  // namespace lmforge

namespace lmforge {
namespace {

TEST(Precision, ResolvesNamesAndSaysWhy) {
    std::string why;
    EXPECT_EQ(resolve_precision("fp32", why), Precision::Fp32);
    EXPECT_EQ(why, "asked for");
    EXPECT_EQ(resolve_precision("bf16", why), Precision::Bf16);
    // auto follows the CPU, and the reason names what decided it.
    EXPECT_EQ(resolve_precision("auto", why), cpu_has_bf16() ? Precision::Bf16 : Precision::Fp32);
    EXPECT_NE(why.find("AVX512_BF16"), std::string::npos) << why;
    EXPECT_THROW(resolve_precision("fp16", why), InputError);
}

}  // namespace
}  // namespace lmforge::test
