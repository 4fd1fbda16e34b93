// checkpoint/checkpoint: the model description a model.safetensors carries (lmforge_config),
// damaged or edited, is refused with an InputError naming the file, never an internal error.
#include "checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "temp_dir.h"
#include "test_util.h"

namespace lmforge {
namespace {

class CheckpointFiles : public test::TempDirTest {
protected:
    // A model.safetensors without tensors whose lmforge_config is `config`.
    std::string model_file(const std::string& config) {
        SafetensorsWriter w;
        w.add_metadata("lmforge_config", config);
        w.write(path("model.safetensors"));
        return path("model.safetensors");
    }
};

// An "arch" that is no string once threw nlohmann's type_error. (Found by
// fuzz/checkpoint_model_fuzz.cpp.)
TEST_F(CheckpointFiles, AnArchThatIsNoStringIsRefused) {
    const std::string p = model_file(R"({"arch": 2, "n_layer": 2})");
    const std::string want = p + ": lmforge_config's \"arch\" is 2, not a string";
    EXPECT_NE(test::input_error_of([&] { read_model_arch(p); }).find(want), std::string::npos);
    EXPECT_NE(test::input_error_of([&] { read_model_config(p); }).find(want), std::string::npos);
    EXPECT_NE(test::input_error_of([&] { read_bert_config(p); }).find(want), std::string::npos);
    EXPECT_EQ(read_model_arch(model_file(R"({"n_layer": 2})")), "gpt2");  // before BERT, no arch
}

// Sizes that are no whole numbers were cut (1.5 read as 1) or, past int64 (1e300), converted
// with undefined behaviour, as was an epsilon past float's range. (Found with
// fuzz/checkpoint_model_fuzz.cpp.)
TEST_F(CheckpointFiles, SizesThatAreNoWholeNumbersAreRefused) {
    const std::string gpt2 = R"({"arch": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 8, "vocab_size": 10, )";
    for (const auto& [bad, shown] : {std::pair{"1.5", "1.5"}, {"1e300", "1e+300"}, {"\"16\"", "\"16\""}}) {
        const std::string p = model_file(gpt2 + R"("block_size": )" + bad + "}");
        EXPECT_NE(test::input_error_of([&] { read_model_config(p); })
                      .find(p + ": \"block_size\" is " + shown + ", not a whole number"),
                  std::string::npos)
            << bad;
    }
    EXPECT_EQ(read_model_config(model_file(gpt2 + R"("block_size": 16})")).block_size, 16);
    const std::string bert = R"({"arch": "bert", "n_layer": 2, "n_head": 2, "hidden": 32, "intermediate": 64, )"
                             R"("vocab_size": 10, "max_position": 8, "type_vocab_size": 2, "num_labels": 0, )";
    const std::string p = model_file(bert + R"("layer_norm_eps": 1e300})");
    EXPECT_NE(test::input_error_of([&] { read_bert_config(p); }).find(p + ": \"layer_norm_eps\" is 1e+300, not a number in"),
              std::string::npos);
    EXPECT_EQ(read_bert_config(model_file(bert + R"("layer_norm_eps": 1e-12})")).layer_norm_eps, 1e-12f);
}

// A million nested lists: JSON that dump() and ==, which recurse once a level, once followed
// down until the stack overflowed, in the message naming the bad value. (Reproduced with
// fuzz/checkpoint_state_fuzz.cpp on an input longer than libFuzzer's default -max_len.)
std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST_F(CheckpointFiles, DeeplyNestedJsonIsRefused) {
    write("ckpt/state.json", R"({"step": )" + nested(1'000'000) + "}");
    EXPECT_NE(test::input_error_of([&] { read_training_state(path("ckpt")); })
                  .find(path("ckpt/state.json") + ": JSON nested deeper than 64 levels"),
              std::string::npos);
    const std::string p = model_file(R"({"arch": )" + nested(1'000'000) + "}");
    EXPECT_NE(test::input_error_of([&] { read_model_arch(p); }).find(p + ": JSON nested deeper than 64 levels"),
              std::string::npos);
    write("ckpt/state.json", R"({"step": )" + nested(64) + "}");  // deep, but not too deep
    EXPECT_NE(test::input_error_of([&] { read_training_state(path("ckpt")); }).find("\"step\" is [[["), std::string::npos);
}

}  // namespace
}  // namespace lmforge
