// Properties every tokenizer lmforge accepts must have, on any text: ids inside the
// vocabulary, decode(encode(text)) == text (byte-level BPE encodes any bytes; the character
// tokenizer may refuse a character with an InputError), and safe_cuts() cutting only where
// encoding the parts apart gives the same ids (tokenizer.h).
#pragma once

#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

namespace lmforge::fuzz {

inline bool ids_in_vocab(const Tokenizer& t, const std::vector<TokenId>& ids) {
    for (const TokenId id : ids) {
        if (id < 0 || id >= t.vocab_size()) return false;
    }
    return true;
}

inline void check_safe_cuts(const Tokenizer& t, std::string_view text, const std::vector<TokenId>& ids, size_t every) {
    const std::vector<size_t> cuts = t.safe_cuts(text, every);
    std::vector<TokenId> joined;
    size_t from = 0;
    for (const size_t cut : cuts) {
        check(cut > from && cut < text.size(), "safe_cuts() are not increasing inside the text");
        const std::vector<TokenId> part = t.encode_ordinary(text.substr(from, cut - from));
        joined.insert(joined.end(), part.begin(), part.end());
        from = cut;
    }
    const std::vector<TokenId> last = t.encode_ordinary(text.substr(from));
    joined.insert(joined.end(), last.begin(), last.end());
    check(joined == ids, "encoding at safe_cuts() gives other ids than encoding the whole text");
}

inline void check_tokenizer(const Tokenizer& t, std::string_view text) {
    std::vector<TokenId> ordinary;
    if (t.kind() == "char") {
        if (!accepts([&] { ordinary = t.encode_ordinary(text); })) return;  // a character outside the alphabet
    } else {
        ordinary = t.encode_ordinary(text);  // byte-level BPE refuses no bytes: an exception is a finding
    }
    check(ids_in_vocab(t, ordinary), "encode_ordinary() gave an id outside the vocabulary");
    check(t.decode(ordinary) == text, "decode(encode_ordinary(text)) != text");
    const std::vector<TokenId> with_specials = t.encode(text);
    check(ids_in_vocab(t, with_specials), "encode() gave an id outside the vocabulary");
    check(t.decode(with_specials) == text, "decode(encode(text)) != text");
    check_safe_cuts(t, text, ordinary, 7);
    check_safe_cuts(t, text, ordinary, 1);
}

}  // namespace lmforge::fuzz
