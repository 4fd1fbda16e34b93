// A Hugging Face model directory's config.json (checkpoint/hf_*.h), as `lmforge import` reads
// it for GPT-2 and BERT, with the parameter layout the model is then built on (without its
// allocation), and the class names export and classify take from its id2label.
#include <cstdint>

#include "checkpoint/hf_bert.h"
#include "checkpoint/hf_common.h"
#include "checkpoint/hf_gpt2.h"
#include "fuzz_util.h"
#include "model/bert_params.h"
#include "model/gpt2_params.h"

using namespace lmforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::write_scratch("hf/config.json", fuzz::as_text(data, size));
    const std::string dir = (fuzz::scratch_dir() / "hf").string();
    fuzz::accepts([&] { is_hf_bert_dir(dir); });
    fuzz::accepts([&] { fuzz::check(gpt2_param_layout(read_hf_gpt2_config(dir)).total() > 0, "an empty layout"); });
    fuzz::accepts([&] { fuzz::check(bert_param_layout(read_hf_bert_config(dir)).total() > 0, "an empty layout"); });
    fuzz::accepts([&] { hf_label_names(dir); });
    return 0;
}
