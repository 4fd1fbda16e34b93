// The model description a checkpoint's model.safetensors carries in its metadata
// ("lmforge_config", checkpoint/checkpoint.h): the input is that entry's text, in an otherwise
// valid file. read_model_json() and read_model_arch() read it as resume and export do;
// read_model_config() and read_bert_config() as sample, eval, logits and export do, with the
// validation and parameter layout a model's constructor computes (without its allocation).
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.h"
#include "fuzz_util.h"
#include "model/bert_params.h"
#include "model/gpt2_params.h"

using namespace lmforge;

namespace {

// A safetensors file with no tensors and the metadata entry lmforge_config = text. (Text that
// is not UTF-8 cannot be a JSON string: its bad bytes become U+FFFD.)
std::string model_file(std::string_view text) {
    const nlohmann::json header = {{"__metadata__", {{"format", "pt"}, {"lmforge_config", std::string(text)}}}};
    const std::string json = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const uint64_t len = json.size();
    std::string bytes(8, '\0');
    std::memcpy(bytes.data(), &len, 8);
    return bytes + json;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::write_scratch("model.safetensors", model_file(fuzz::as_text(data, size)));
    fuzz::accepts([&] { read_model_json(path); });
    fuzz::accepts([&] { read_model_arch(path); });
    fuzz::accepts([&] {
        const Gpt2Config c = read_model_config(path);
        c.validate();
        fuzz::check(gpt2_param_layout(c).total() > 0, "an empty GPT-2 layout");
    });
    fuzz::accepts([&] {
        const BertConfig c = read_bert_config(path);
        c.validate();
        fuzz::check(bert_param_layout(c).total() > 0, "an empty BERT layout");
    });
    return 0;
}
