// JSON Lines (data/jsonl.h) as its readers take it: documents for prepare (a "text" field),
// labelled examples for classify ("text" and "label") and instruction examples for SFT
// (Alpaca's or prompt/response fields), each from the input as a .jsonl file.
#include <cstdint>

#include "core/log.h"
#include "data/documents.h"
#include "data/instructions.h"
#include "data/jsonl.h"
#include "data/labelled.h"
#include "fuzz_util.h"
#include "tokenizer/bpe_trainer.h"

using namespace lmforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // The 256 bytes and <|endoftext|>: any text encodes, and cheaply.
    static const auto tokenizer = [] {
        log::set_level(log::Level::Error);  // read_documents warns of empty texts
        return train_bpe({"ab"}, 258);
    }();
    const std::string_view text = fuzz::as_text(data, size);
    fuzz::accepts([&] {
        for_each_jsonl(text, "fuzz.jsonl", [](const nlohmann::json& j, size_t line) {
            fuzz::check(j.is_object() && line > 0, "for_each_jsonl passed on what is no object");
        });
    });
    const std::string path = fuzz::write_scratch("data.jsonl", text);
    fuzz::accepts([&] { read_documents({path}, "text"); });
    fuzz::accepts([&] { load_labelled({.path = path, .max_len = 8}, *tokenizer); });
    fuzz::accepts([&] { load_instructions({.path = path, .max_len = 256}, *tokenizer); });
    return 0;
}
