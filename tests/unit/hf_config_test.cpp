// checkpoint/hf_*: a Hugging Face config.json that is damaged or edited is refused with an
// InputError naming the file and field, never undefined behaviour or an internal error.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "checkpoint/hf_bert.h"
#include "checkpoint/hf_gpt2.h"
#include "temp_dir.h"
#include "test_util.h"

namespace lmforge {
namespace {

class HfConfig : public test::TempDirTest {
protected:
    const nlohmann::json gpt2_ = {{"model_type", "gpt2"}, {"n_layer", 1}, {"n_head", 1}, {"n_embd", 8},
                                  {"vocab_size", 10}, {"n_positions", 4}};
    std::string dir_with(const nlohmann::json& config) {
        write("hf/config.json", config.dump());
        return path("hf");
    }
};

// n_embd = 2^62 once overflowed 4 x n_embd (n_inner's default) before it was validated:
// undefined behaviour, which the asan preset's UBSan stops at. (Found with
// fuzz/hf_config_fuzz.cpp.)
TEST_F(HfConfig, Gpt2SizesPastTheModelsBoundsAreRefused) {
    nlohmann::json config = gpt2_;
    config["n_embd"] = int64_t{1} << 62;
    const std::string dir = dir_with(config);
    EXPECT_NE(test::input_error_of([&] { read_hf_gpt2_config(dir); })
                  .find(dir + "/config.json: the model would hold"),
              std::string::npos);
    EXPECT_EQ(read_hf_gpt2_config(dir_with(gpt2_)).n_embd, 8);
}

TEST_F(HfConfig, BertSizesPastTheModelsBoundsAreRefused) {
    const nlohmann::json bert = {{"model_type", "bert"}, {"num_hidden_layers", 1}, {"num_attention_heads", 1},
                                 {"hidden_size", int64_t{1} << 62}, {"intermediate_size", 64}, {"vocab_size", 10},
                                 {"max_position_embeddings", 8}};
    const std::string dir = dir_with(bert);
    EXPECT_NE(test::input_error_of([&] { read_hf_bert_config(dir); })
                  .find(dir + "/config.json: the model would hold"),
              std::string::npos);
}

// A million nested lists once overflowed the stack in dump(), naming the bad value.
// (Reproduced with fuzz/hf_config_fuzz.cpp on an input longer than libFuzzer's default -max_len.)
TEST_F(HfConfig, DeeplyNestedJsonIsRefused) {
    write("hf/config.json", R"({"model_type": )" + std::string(1'000'000, '[') + std::string(1'000'000, ']') + "}");
    EXPECT_NE(test::input_error_of([&] { read_hf_gpt2_config(path("hf")); })
                  .find(path("hf/config.json") + ": JSON nested deeper than 64 levels"),
              std::string::npos);
}

}  // namespace
}  // namespace lmforge
