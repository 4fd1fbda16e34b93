// Byte-level BPE, as GPT-2: text is pre-tokenized into pieces (pretokenizer.h); each piece's
// bytes start as single-byte tokens, and the adjacent pair with the lowest merge rank is
// merged, leftmost first, until no pair has a merge. Loads and saves GPT-2's files
// (encoder.json + vocab.bpe); Hugging Face tokenizer.json files load through tokenizer_io.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace lmforge {

class BpeTokenizer final : public Tokenizer {
public:
    // vocab: (bytes, id) for every ordinary token, including all 256 single bytes;
    // merges: (left bytes, right bytes) in rank order, each merged token in vocab;
    // specials: (text, id), ids outside the ordinary ones; together the ids are 0 .. n-1 for
    // the n tokens, each once. `source` names where it came from, for errors. Throws InputError
    // for an inconsistent vocabulary or an id outside [0, n).
    BpeTokenizer(std::vector<std::pair<std::string, TokenId>> vocab,
                 const std::vector<std::pair<std::string, std::string>>& merges,
                 std::map<std::string, TokenId> specials, const std::string& source);
    ~BpeTokenizer() override;

    std::vector<TokenId> encode_ordinary(std::string_view text) const override;
    std::string decode(std::span<const TokenId> ids) const override;
    int64_t vocab_size() const override { return static_cast<int64_t>(id_bytes_.size()); }
    std::string kind() const override { return "bpe"; }
    std::vector<size_t> safe_cuts(std::string_view text, size_t every) const override;
    void save(const std::string& dir) const override;  // encoder.json + vocab.bpe + added_tokens.json
    TokenId add_special(const std::string& text) override;

    // The BPE of one pre-tokenized piece, appended to out. A piece that is itself a token is
    // looked up whole (as tiktoken does), which equals merging for consistent vocabularies:
    // those where merging a token's own bytes gives back the token, as merge-built ones do.
    void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;
    // The same by merging alone, without the whole-piece lookup: to check consistency.
    void encode_piece_by_merges(std::string_view piece, std::vector<TokenId>& out) const;
    const std::vector<std::pair<TokenId, TokenId>>& merges() const { return merges_; }

private:
    void merge_small(std::string_view piece, std::vector<TokenId>& out) const;
    void merge_large(std::string_view piece, std::vector<TokenId>& out) const;

    struct Tables;                    // hash tables: bytes -> id, (id, id) -> merge
    std::unique_ptr<Tables> tables_;
    std::vector<std::string> id_bytes_;  // id -> bytes (specials: their text)
    std::vector<std::pair<TokenId, TokenId>> merges_;  // in rank order, for save()
    TokenId byte_token_[256];
};

}  // namespace lmforge
