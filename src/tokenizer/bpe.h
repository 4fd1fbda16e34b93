// Byte-level BPE, as GPT-2: text is pre-tokenized into pieces (pretokenizer.h; or the chain a
// Hugging Face tokenizer.json names, pretokenizer_chain.h); each piece's bytes start as
// single-byte tokens, and the adjacent pair with the lowest merge rank is merged, leftmost
// first, until no pair has a merge. Loads and saves GPT-2's files (encoder.json + vocab.bpe);
// Hugging Face tokenizer.json files load through tokenizer_io.h, and those GPT-2's files cannot
// hold (another pre-tokenizer, added tokens that are not special) are saved as tokenizer.json.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace lmforge {

class PretokenizerChain;

// What a Hugging Face tokenizer.json may set beyond GPT-2's files.
struct BpeOptions {
    // The pre-tokenizer; nullptr: GPT-2's (pretokenize_gpt2, the fast path).
    std::shared_ptr<const PretokenizerChain> pretokenizer;
    // Hugging Face's ignore_merges (Llama 3 sets it): a piece that is itself a token is that
    // token, whatever the merges would make of it; tiktoken does the same, and so do GPT-2's
    // files here. false: the merges alone decide, as Hugging Face's BPE does by default.
    bool ignore_merges = true;
    // Added tokens that are not special ("special": false): Hugging Face finds them in any
    // text, so encode_ordinary() does too. (Special ones go in the specials.)
    std::map<std::string, TokenId> added;
};

class BpeTokenizer final : public Tokenizer {
public:
    // vocab: (bytes, id) for every ordinary token, including all 256 single bytes;
    // merges: (left bytes, right bytes) in rank order, each merged token in vocab;
    // specials: (text, id), ids outside the ordinary ones; together the ids are 0 .. n-1 for
    // the n tokens (options.added's included), each once. `source` names where it came from,
    // for errors. Throws InputError for an inconsistent vocabulary or an id outside [0, n).
    BpeTokenizer(std::vector<std::pair<std::string, TokenId>> vocab,
                 const std::vector<std::pair<std::string, std::string>>& merges,
                 std::map<std::string, TokenId> specials, const std::string& source, BpeOptions options = {});
    ~BpeTokenizer() override;

    std::vector<TokenId> encode_ordinary(std::string_view text) const override;
    std::string decode(std::span<const TokenId> ids) const override;
    int64_t vocab_size() const override { return static_cast<int64_t>(id_bytes_.size()); }
    std::string kind() const override { return "bpe"; }
    std::vector<size_t> safe_cuts(std::string_view text, size_t every) const override;
    // encoder.json + vocab.bpe + added_tokens.json, or tokenizer.json where those would encode
    // otherwise; tokenizer_config.json beside them if roles() names tokens.
    void save(const std::string& dir) const override;
    TokenId add_special(const std::string& text) override;

    // The BPE of one pre-tokenized piece, appended to out. A piece that is itself a token is
    // looked up whole (as tiktoken does, and Hugging Face with ignore_merges), which equals
    // merging for consistent vocabularies: those where merging a token's own bytes gives back
    // the token, as merge-built ones mostly do. Without ignore_merges, only such tokens are.
    void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;
    // The same by merging alone, without the whole-piece lookup: to check consistency.
    void encode_piece_by_merges(std::string_view piece, std::vector<TokenId>& out) const;
    const std::vector<std::pair<TokenId, TokenId>>& merges() const { return merges_; }

private:
    void find_tokens_merging_gives();
    void encode_text(std::string_view text, std::vector<TokenId>& out) const;
    void save_tokenizer_json(const std::string& dir) const;
    void merge_small(std::string_view piece, std::vector<TokenId>& out) const;
    void merge_large(std::string_view piece, std::vector<TokenId>& out) const;

    struct Tables;                    // hash tables: bytes -> id, (id, id) -> merge
    std::unique_ptr<Tables> tables_;
    std::vector<std::string> id_bytes_;  // id -> bytes (specials: their text)
    std::vector<std::pair<TokenId, TokenId>> merges_;  // in rank order, for save()
    TokenId byte_token_[256];
    std::shared_ptr<const PretokenizerChain> pretokenizer_;  // nullptr: GPT-2's
    bool ignore_merges_ = true;
    std::vector<bool> whole_is_merged_;  // without ignore_merges: id -> merging its bytes gives it
    bool all_whole_are_merged_ = true;
    std::map<std::string, TokenId> added_;  // not special: matched in any text
};

}  // namespace lmforge
