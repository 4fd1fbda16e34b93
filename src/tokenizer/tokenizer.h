// The tokenizer interface: text to token ids and back. Implementations: byte-level BPE
// (GPT-2's, Hugging Face tokenizer.json files, our own trained ones) and characters.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lmforge {

using TokenId = int32_t;

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Special tokens (e.g. "<|endoftext|>") are encoded as the text they are.
    virtual std::vector<TokenId> encode_ordinary(std::string_view text) const = 0;
    // Like encode_ordinary, but each special token's text becomes its id.
    std::vector<TokenId> encode(std::string_view text) const;
    // The bytes the ids stand for; InputError for an id outside the vocabulary.
    virtual std::string decode(std::span<const TokenId> ids) const = 0;

    virtual int64_t vocab_size() const = 0;  // ids are in [0, vocab_size)
    virtual std::string kind() const = 0;    // "bpe" or "char", for records and messages
    const std::map<std::string, TokenId>& special_tokens() const { return specials_; }
    // Appends a special token with the next id (vocab_size() before the call) and returns it;
    // InputError if the text is already a special token, or the tokenizer takes none (chars).
    virtual TokenId add_special(const std::string& text);
    // The id of "<|endoftext|>", which separates documents, if the vocabulary has it.
    std::optional<TokenId> eot_id() const;

    // Byte offsets at which text may be cut into parts that encode independently, so that
    // encoding the parts and concatenating gives encode_ordinary(text): for parallel encoding
    // of long documents. Roughly every `every` bytes.
    virtual std::vector<size_t> safe_cuts(std::string_view text, size_t every) const = 0;

    // Writes the files that load_tokenizer() reads back, into directory dir.
    virtual void save(const std::string& dir) const = 0;

protected:
    std::map<std::string, TokenId> specials_;
};

inline constexpr const char* kEndOfText = "<|endoftext|>";

}  // namespace lmforge
