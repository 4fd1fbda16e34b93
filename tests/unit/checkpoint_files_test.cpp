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

}  // namespace
}  // namespace lmforge
