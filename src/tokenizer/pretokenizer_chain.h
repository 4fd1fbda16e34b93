// The pre-tokenizer of a Hugging Face tokenizer.json that is not GPT-2's alone: a chain of
// steps, each splitting the pieces of the one before, as Hugging Face's Sequence does:
//   Split    on a regular expression or a string, behavior "Isolated" (regex_pretokenizer.h):
//            Llama 3's and Qwen2's patterns;
//   Digits   each number character (\p{N}) a piece of its own, or runs of them (SmolLM2);
//   ByteLevel, last: with use_regex, GPT-2's split (pretokenizer.h), else no split.
// Anything else is refused by name (Metaspace, Whitespace, Split's other behaviours, a prefix
// space): lmforge would give other ids than Hugging Face. The byte-level alphabet itself is
// the BPE's business (bpe.h), not this.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lmforge {

class RegexSplitter;

class PretokenizerChain {
public:
    // From tokenizer.json's "pre_tokenizer" value. InputError naming `path` and the type,
    // behaviour or option that is not supported, in one line.
    static std::shared_ptr<const PretokenizerChain> from_json(const nlohmann::json& pre, const std::string& path);

    // Calls piece(part) for each piece of text, in order; the pieces concatenate to text.
    // Thread-safe.
    void split(std::string_view text, const std::function<void(std::string_view)>& piece) const;

    // GPT-2's split alone (plain ByteLevel, or a Split on GPT-2's pattern before a ByteLevel
    // without one): the BPE's native fast path does the same.
    bool is_gpt2() const;
    // Whether a space (U+0020) after a character that is not white space always starts a piece
    // and no piece before it depends on what follows: then text may be cut there and the parts
    // encoded apart (Tokenizer::safe_cuts). True of GPT-2's, Llama 3's and Qwen2's patterns and
    // of Digits; false for any other pattern, whose splits lmforge cannot reason about.
    bool cuts_at_spaces() const;
    // The "pre_tokenizer" value it was read from, as JSON text: written back by save().
    const std::string& json_text() const { return json_text_; }

private:
    enum class Kind { Gpt2, Regex, Digit, DigitRun };
    struct Step {
        Kind kind;
        std::shared_ptr<const RegexSplitter> regex;  // Kind::Regex
        bool known_pattern = false;                  // Llama 3's or Qwen2's (cuts_at_spaces)
    };
    void add_steps(const nlohmann::json& pre, const std::string& path, bool& byte_level);
    void apply(size_t step, std::string_view text, const std::function<void(std::string_view)>& piece) const;

    std::vector<Step> steps_;
    std::string json_text_;
};

}  // namespace lmforge
