// checkpoint/hf_*: a Hugging Face config.json that is damaged or edited is refused with an
// InputError naming the file and field, never undefined behaviour or an internal error.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "checkpoint/hf_bert.h"
#include "checkpoint/hf_gpt2.h"
#include "checkpoint/hf_llama.h"
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

// Llama configs lmforge does not compute are refused in one line naming the field.
TEST_F(HfConfig, LlamaConfigsLmforgeDoesNotComputeAreRefusedByField) {
    const nlohmann::json llama = {{"model_type", "llama"},     {"num_hidden_layers", 1}, {"num_attention_heads", 4},
                                  {"num_key_value_heads", 2}, {"hidden_size", 32},      {"intermediate_size", 48},
                                  {"vocab_size", 10},         {"max_position_embeddings", 16}};
    EXPECT_EQ(read_hf_llama_config(dir_with(llama)).n_kv_head, 2);
    struct Case {
        const char* key;
        nlohmann::json value;
        std::string want;
    };
    const std::vector<Case> cases = {
        {"num_key_value_heads", 3, "num_key_value_heads = 3 does not divide num_attention_heads = 4"},
        {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}, "rope_scaling.rope_type = \"yarn\" is not supported"},
        {"rope_parameters", {{"rope_type", "dynamic"}, {"rope_theta", 1e4}},
         "rope_parameters.rope_type = \"dynamic\" is not supported"},
        {"hidden_act", "gelu", "hidden_act = \"gelu\" is not supported"},
        {"attention_bias", true, "attention_bias = true is not supported"},
        {"head_dim", 16, "head_dim = 16 is not hidden_size / num_attention_heads = 8"},
    };
    for (const Case& c : cases) {
        nlohmann::json config = llama;
        config[c.key] = c.value;
        const std::string dir = dir_with(config);
        const std::string message = test::input_error_of([&] { read_hf_llama_config(dir); });
        EXPECT_NE(message.find(dir + "/config.json: " + c.want), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace lmforge
