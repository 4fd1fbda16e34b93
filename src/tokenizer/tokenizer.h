// The tokenizer interface: text to token ids and back. Implementations: byte-level BPE
// (GPT-2's, Hugging Face tokenizer.json files, our own trained ones) and characters.
#pragma once

#include <cstdint>
#include <functional>
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
    // The token that separates documents: "<|endoftext|>" if the vocabulary has it as a special
    // token, else the eos_token of roles() (Llama 3's "<|end_of_text|>"), if any.
    std::optional<TokenId> eot_id() const;
    // The tokens tokenizer_config.json names, by its keys: "bos_token", "eos_token",
    // "pad_token", "unk_token" (those it names and the tokenizer has).
    const std::map<std::string, TokenId>& roles() const { return roles_; }
    void set_role(const std::string& role, TokenId id) { roles_[role] = id; }

    // Byte offsets at which text may be cut into parts that encode independently, so that
    // encoding the parts and concatenating gives encode_ordinary(text): for parallel encoding
    // of long documents. Roughly every `every` bytes.
    virtual std::vector<size_t> safe_cuts(std::string_view text, size_t every) const = 0;

    // Writes the files that load_tokenizer() reads back, into directory dir.
    virtual void save(const std::string& dir) const = 0;

protected:
    // Cuts text at each occurrence of one of `tokens` (the earliest; of those starting there,
    // the longest): text_part(part) for each non-empty stretch between, token(id) for each.
    static void split_on_tokens(std::string_view text, const std::map<std::string, TokenId>& tokens,
                                const std::function<void(std::string_view)>& text_part,
                                const std::function<void(TokenId)>& token);

    std::map<std::string, TokenId> specials_;
    std::map<std::string, TokenId> roles_;
};

inline constexpr const char* kEndOfText = "<|endoftext|>";

}  // namespace lmforge
