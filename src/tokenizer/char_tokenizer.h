// A character-level tokenizer: one id per Unicode character of a fixed alphabet (nanoGPT's
// shakespeare_char), plus <|endoftext|> to separate documents. The alphabet is built from
// training text and saved as tokenizer.json beside the shards.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace lmforge {

class CharTokenizer final : public Tokenizer {
public:
    // chars: the alphabet, each a UTF-8 character, in id order; <|endoftext|> gets the next id.
    explicit CharTokenizer(std::vector<std::string> chars);

    // The sorted set of characters in texts.
    static CharTokenizer from_texts(const std::vector<std::string_view>& texts);

    // InputError naming the character and its byte offset for one outside the alphabet.
    std::vector<TokenId> encode_ordinary(std::string_view text) const override;
    std::string decode(std::span<const TokenId> ids) const override;
    int64_t vocab_size() const override { return static_cast<int64_t>(chars_.size()) + 1; }
    std::string kind() const override { return "char"; }
    std::vector<size_t> safe_cuts(std::string_view text, size_t every) const override;
    void save(const std::string& dir) const override;  // tokenizer.json

    const std::vector<std::string>& chars() const { return chars_; }

private:
    std::vector<std::string> chars_;
    std::map<std::string, TokenId, std::less<>> ids_;
};

}  // namespace lmforge
