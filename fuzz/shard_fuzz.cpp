// Token shards (data/shard.h): the input's first byte picks the name, and so the format the
// reader expects (.npy, llm.c's <name>_NNNNNN.bin, or a nanoGPT .bin that may or may not begin
// with an llm.c header); the rest is the file. Every token of an accepted shard must lie in
// the file, and check_vocab() must either pass or name a token.
#include <cstdint>
#include <numeric>

#include "data/shard.h"
#include "fuzz_util.h"

using namespace lmforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    static const char* const kNames[] = {"tokens.npy", "train_000001.bin", "val.bin"};
    const std::string path = fuzz::write_scratch(kNames[data[0] % 3], fuzz::as_text(data + 1, size - 1));
    fuzz::accepts([&] {
        const Shard shard(path);
        const auto tokens = shard.tokens();
        fuzz::check(tokens.size_bytes() <= size - 1, "a shard holds more token bytes than its file");
        volatile uint64_t sum = std::accumulate(tokens.begin(), tokens.end(), uint64_t{0});
        (void)sum;
        fuzz::accepts([&] { shard.check_vocab(50257); });
    });
    return 0;
}
