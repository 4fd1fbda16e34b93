// A Hugging Face model directory's config.json (checkpoint/hf_*.h), as `lmforge import` reads
// it for GPT-2 and BERT, and the class names export and classify take from its id2label.
#include <cstdint>

#include "checkpoint/hf_bert.h"
#include "checkpoint/hf_common.h"
#include "checkpoint/hf_gpt2.h"
#include "fuzz_util.h"

using namespace lmforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::write_scratch("hf/config.json", fuzz::as_text(data, size));
    const std::string dir = (fuzz::scratch_dir() / "hf").string();
    fuzz::accepts([&] { is_hf_bert_dir(dir); });
    fuzz::accepts([&] { read_hf_gpt2_config(dir); });
    fuzz::accepts([&] { read_hf_bert_config(dir); });
    fuzz::accepts([&] { hf_label_names(dir); });
    return 0;
}
