// tokenizer.json files (tokenizer/tokenizer_io.h): Hugging Face's BPE ones and lmforge's
// character tokenizer. An input is the file and a text, separated by a fuzz::kPartSeparator
// line; what loads must encode the text and decode it back (tokenizer_checks.h).
#include <cstdint>

#include "fuzz_util.h"
#include "tokenizer/tokenizer_io.h"
#include "tokenizer_checks.h"

using namespace lmforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(fuzz::as_text(data, size), 2);
    const std::string path = fuzz::write_scratch("tokenizer.json", parts[0]);
    const std::string_view text = parts.size() > 1 ? parts[1] : "Hello, world! It's 2024.\n<|endoftext|>";
    fuzz::accepts([&] {
        const auto tokenizer = load_tokenizer(path);
        fuzz::check_tokenizer(*tokenizer, text);
    });
    return 0;
}
