// Byte-level BPE encoding and decoding on any bytes, with GPT-2's own files (from the data
// home, fetched there as the tests fetch them) and with a small tokenizer trained here, which
// also has BERT's bracketed special tokens: decode(encode(x)) == x, ids inside the vocabulary,
// safe cuts that change nothing (tokenizer_checks.h); and decode() of any ids either decodes
// or refuses them with an InputError.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "data/data_home.h"
#include "data/tokenizer_spec.h"
#include "fuzz_util.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/encoder_specials.h"
#include "tokenizer_checks.h"

using namespace lmforge;

namespace {

std::unique_ptr<Tokenizer> gpt2() {
    try {
        return open_tokenizer("gpt2", data_home());
    } catch (const Error& e) {  // offline: the trained one still runs
        std::fprintf(stderr, "bpe_fuzz: without GPT-2's tokenizer: %s\n", e.what());
        return nullptr;
    }
}

std::unique_ptr<Tokenizer> trained() {
    const std::vector<std::string_view> texts = {
        "the quick brown fox jumps over the lazy dog; it's 12345 o'clock, isn't it?\n\n",
        "Les élèves ont mangé 3½ gâteaux — naïvement.   Δ = 0.5 × π\t\ttabs\r\n",
        "日本語のテキストと emoji 🙂🙂 and    many     spaces\u00a0\u2003here",
    };
    auto t = train_bpe(texts, 320);
    add_encoder_specials(*t);  // [PAD], [CLS], [SEP], [MASK]: specials not written <|...|>
    return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::unique_ptr<Tokenizer> tokenizers[] = {gpt2(), trained()};
    const std::string_view text = fuzz::as_text(data, size);
    std::vector<TokenId> ids(size / sizeof(TokenId));
    if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * sizeof(TokenId));
    for (const auto& t : tokenizers) {
        if (t == nullptr) continue;
        fuzz::check_tokenizer(*t, text);
        fuzz::accepts([&] { t->decode(ids); });
    }
    return 0;
}
