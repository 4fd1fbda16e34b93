// What `lmforge prepare` writes beside the data and training reads back, from a directory a
// user names (data.dir) and may have edited or damaged: an input is prepare.json, labels.json
// and instructions.json, separated by fuzz::kPartSeparator lines (a file whose part is missing
// or empty is left out), in a directory that also holds one small llm.c shard. Read as
// training and `lmforge data check` read them: the vocabulary and <|endoftext|> id from
// prepare.json (data/prepare_record.h), the shards checked against that vocabulary, and the
// label and instruction records (whose split files are absent here).
#include <cstdint>
#include <vector>

#include "data/instructions.h"
#include "data/labelled.h"
#include "data/prepare_record.h"
#include "data/shard.h"
#include "data/shard_check.h"
#include "fuzz_util.h"

using namespace lmforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(fuzz::as_text(data, size), 3);
    fuzz::remove_scratch("data");
    fuzz::write_scratch("data/prepare.json", parts[0]);
    if (parts.size() > 1 && !parts[1].empty()) fuzz::write_scratch("data/labels.json", parts[1]);
    if (parts.size() > 2 && !parts[2].empty()) fuzz::write_scratch("data/instructions.json", parts[2]);
    const std::string dir = (fuzz::scratch_dir() / "data").string();
    const std::vector<uint16_t> tokens = {464, 2068, 7586, 50256};
    write_shard(dir + "/train_000000.bin", tokens);
    fuzz::accepts([&] {
        const int64_t vocab = data_vocab_size(dir);
        fuzz::check(vocab >= 0 && vocab <= kMaxShardVocab, "a vocabulary outside [0, 65536]");
    });
    fuzz::accepts([&] {
        const int32_t eot = data_eot_id(dir);
        fuzz::check(eot >= -1 && eot < kMaxShardVocab, "an <|endoftext|> id outside [-1, 65536)");
    });
    fuzz::accepts([&] { check_shards(dir); });
    fuzz::accepts([&] { load_labelled_dir(dir); });
    fuzz::accepts([&] { load_instructions_dir(dir); });
    return 0;
}
