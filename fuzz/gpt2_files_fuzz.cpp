// GPT-2's tokenizer files (tokenizer/tokenizer_io.h): an input is encoder.json, vocab.bpe,
// added_tokens.json and a text, separated by fuzz::kPartSeparator lines (added_tokens.json is
// left out where its part is missing or empty). A directory of them loads through
// load_tokenizer(), as `--tokenizer DIR` does; what loads must encode the text and decode it
// back (tokenizer_checks.h).
#include <cstdint>

#include "fuzz_util.h"
#include "tokenizer/tokenizer_io.h"
#include "tokenizer_checks.h"

using namespace lmforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(fuzz::as_text(data, size), 4);
    fuzz::remove_scratch("tok");
    fuzz::write_scratch("tok/encoder.json", parts[0]);
    fuzz::write_scratch("tok/vocab.bpe", parts.size() > 1 ? parts[1] : "");
    if (parts.size() > 2 && !parts[2].empty()) fuzz::write_scratch("tok/added_tokens.json", parts[2]);
    const std::string_view text = parts.size() > 3 ? parts[3] : "Hello, world! It's 2024.\n<|endoftext|>";
    fuzz::accepts([&] {
        const auto tokenizer = load_tokenizer((fuzz::scratch_dir() / "tok").string());
        fuzz::check_tokenizer(*tokenizer, text);
    });
    return 0;
}
