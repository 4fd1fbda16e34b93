// CSV (data/csv.h) as classify reads it: the rows, each as wide as the header, and the
// labelled examples of its "text" and "label" columns from the input as a .csv file.
#include <cstdint>

#include "data/csv.h"
#include "data/labelled.h"
#include "fuzz_util.h"
#include "tokenizer/bpe_trainer.h"

using namespace lmforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto tokenizer = train_bpe({"ab"}, 258);  // the 256 bytes and <|endoftext|>
    const std::string_view text = fuzz::as_text(data, size);
    fuzz::accepts([&] {
        const std::vector<CsvRow> rows = parse_csv(text, "fuzz.csv");
        for (const CsvRow& row : rows) {
            fuzz::check(row.fields.size() == rows[0].fields.size(), "a row is not as wide as the header");
            fuzz::check(row.line >= 1, "a row starts before line 1");
        }
    });
    const std::string path = fuzz::write_scratch("data.csv", text);
    fuzz::accepts([&] { load_labelled({.path = path, .max_len = 8}, *tokenizer); });
    return 0;
}
