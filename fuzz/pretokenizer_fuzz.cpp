// Differential: GPT-2's pre-tokenizer as lmforge writes it by hand (tokenizer/pretokenizer.h)
// against a slow reference that follows GPT-2's pattern
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// literally: at each position the alternatives are tried in order and the first that matches
// wins, each quantifier greedy, with the backtracking the lookahead needs. Characters and their
// classes come from the project's tables (tokenizer/unicode.h), with no ASCII fast path; a
// byte that is not UTF-8 is one character of none of the classes, as lmforge treats it. The
// two splits must be identical.
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"

using namespace lmforge;

namespace {

struct Char {
    uint32_t cp;
    CharClass cls;
    size_t at;  // byte offset in the text
};

std::vector<Char> characters(std::string_view text) {
    std::vector<Char> out;
    const auto* begin = reinterpret_cast<const unsigned char*>(text.data());
    const auto* end = begin + text.size();
    for (const unsigned char* p = begin; p < end;) {
        uint32_t cp;
        const int len = utf8_decode(p, end, cp);
        out.push_back({cp, char_class(cp), static_cast<size_t>(p - begin)});
        p += len;
    }
    return out;
}

// The pattern's alternatives, each returning the end of its match at i, or 0 for none (every
// match is at least one character long, so 0 is never a real end).
class Reference {
public:
    explicit Reference(std::vector<Char> chars) : c_(std::move(chars)), n_(c_.size()) {}

    size_t match(size_t i) const {
        for (const char* word : {"s", "t", "re", "ve", "m", "ll", "d"}) {
            if (const size_t j = contraction(i, word)) return j;
        }
        for (const CharClass cls : {CharClass::Letter, CharClass::Number, CharClass::Other}) {
            if (const size_t j = optional_space_then_run(i, cls)) return j;
        }
        if (const size_t j = spaces_not_before_non_space(i)) return j;
        return run(i, CharClass::Space);  // \s+
    }

private:
    // '<word>
    size_t contraction(size_t i, std::string_view word) const {
        if (i >= n_ || c_[i].cp != '\'') return 0;
        for (size_t k = 0; k < word.size(); k++) {
            if (i + 1 + k >= n_ || c_[i + 1 + k].cp != static_cast<uint32_t>(word[k])) return 0;
        }
        return i + 1 + word.size();
    }

    // The end of the longest run of class cls from i; 0 if c_[i] is not of it. (cls+)
    size_t run(size_t i, CharClass cls) const {
        size_t j = i;
        while (j < n_ && c_[j].cls == cls) j++;
        return j > i ? j : 0;
    }

    // " ?cls+": the greedy ? tries the space first, then nothing.
    size_t optional_space_then_run(size_t i, CharClass cls) const {
        if (i < n_ && c_[i].cp == ' ') {
            if (const size_t j = run(i + 1, cls)) return j;
        }
        return run(i, cls);
    }

    // \s+(?!\S): the longest run of white space not followed by a character that is not
    // white space, backing off one character at a time.
    size_t spaces_not_before_non_space(size_t i) const {
        const size_t longest = run(i, CharClass::Space);
        for (size_t j = longest; j > i; j--) {
            if (j == n_ || c_[j].cls == CharClass::Space) return j;
        }
        return 0;
    }

    std::vector<Char> c_;
    size_t n_;
};

// The pieces as (byte offset, byte length).
using Split = std::vector<std::pair<size_t, size_t>>;

Split reference_split(std::string_view text) {
    const std::vector<Char> chars = characters(text);
    const Reference ref(chars);
    Split out;
    for (size_t i = 0; i < chars.size();) {
        const size_t j = ref.match(i);
        fuzz::check(j > i, "the reference matched nothing");
        const size_t to = j < chars.size() ? chars[j].at : text.size();
        out.emplace_back(chars[i].at, to - chars[i].at);
        i = j;
    }
    return out;
}

Split lmforge_split(std::string_view text) {
    Split out;
    pretokenize_gpt2(text, [&](std::string_view piece) {
        out.emplace_back(static_cast<size_t>(piece.data() - text.data()), piece.size());
    });
    return out;
}

void print(const char* who, std::string_view text, const Split& split) {
    std::fprintf(stderr, "%s:", who);
    for (const auto& [at, len] : split) std::fprintf(stderr, " [%.*s]", static_cast<int>(len), text.data() + at);
    std::fprintf(stderr, "\n");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text = fuzz::as_text(data, size);
    const Split want = reference_split(text), got = lmforge_split(text);
    if (got != want) {
        print("reference", text, want);
        print("lmforge  ", text, got);
    }
    fuzz::check(got == want, "pretokenize_gpt2 splits otherwise than GPT-2's pattern");
    return 0;
}
