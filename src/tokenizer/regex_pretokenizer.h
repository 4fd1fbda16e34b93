// A pre-tokenizer step that splits text with a regular expression, as Hugging Face's Split
// pre-tokenizer does with behavior "Isolated": every match is a piece, and so is every stretch
// of text between two matches. It runs the patterns of Llama 3's, Qwen2's and other
// tokenizer.json files through PCRE2 (UTF and Unicode properties, JIT-compiled); GPT-2's own
// pattern has a hand-written fast path (pretokenizer.h) and never comes here.
//
// Hugging Face runs these patterns with Oniguruma. Where PCRE2 reads an escape differently, the
// pattern is rewritten before compiling: \s is Unicode's White_Space in both (PCRE2 alone would
// also take U+180E), \w is letters, marks, decimal digits and connectors as Oniguruma has it.
// Not supported: \S or \W inside a character class (refused), and invalid UTF-8, which no
// pattern can match: such bytes fall between matches and become pieces of their own.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace lmforge {

class RegexSplitter {
public:
    // pattern: a regular expression (Hugging Face's {"Regex": ...}), or with literal = true a
    // plain string ({"String": ...}). InputError naming `where` if it does not compile.
    RegexSplitter(const std::string& pattern, bool literal, const std::string& where);
    ~RegexSplitter();
    RegexSplitter(const RegexSplitter&) = delete;
    RegexSplitter& operator=(const RegexSplitter&) = delete;

    // Calls piece(part) for each match and each non-empty gap between matches, in order: the
    // parts concatenate to text. An empty match gives no piece but ends the gap before it.
    // Thread-safe: each thread matches
    // with its own match data.
    void split(std::string_view text, const std::function<void(std::string_view)>& piece) const;

    const std::string& pattern() const { return pattern_; }

private:
    struct Code;
    std::unique_ptr<Code> code_;
    std::string pattern_;
};

// The pattern as PCRE2 must be given it to match as Oniguruma does (see above); InputError
// naming `where` for \S or \W inside a character class.
std::string oniguruma_compatible(const std::string& pattern, const std::string& where);

}  // namespace lmforge
