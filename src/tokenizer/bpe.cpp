#include "tokenizer/bpe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <queue>

#include "core/error.h"
#include "core/file_io.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenizer.h"

namespace lmforge {

namespace {

constexpr uint32_t kNoMerge = std::numeric_limits<uint32_t>::max();

uint64_t mix(uint64_t h) {
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return h;
}

uint64_t hash_bytes(std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    const char* p = s.data();
    size_t n = s.size();
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        h = mix(h ^ v);
    }
    uint64_t v = 0;
    std::memcpy(&v, p, n);
    return mix(h ^ v ^ (uint64_t{n} << 56));
}

size_t capacity_for(size_t n) {
    size_t c = 16;
    while (c < 2 * n) c *= 2;  // load factor <= 1/2: short probes
    return c;
}

}  // namespace

// Open-addressing tables with linear probing, sized once at load.
struct BpeTokenizer::Tables {
    struct Word {
        uint64_t hash = 0;
        TokenId id = -1;  // -1: empty slot
    };
    struct Merge {
        uint64_t key = UINT64_MAX;  // (left << 32) | right; UINT64_MAX: empty slot
        uint32_t rank = kNoMerge;
        TokenId merged = -1;
    };
    std::vector<Word> words;    // bytes -> id, bytes looked up in id_bytes
    std::vector<Merge> pairs;   // (id, id) -> rank and merged id

    static uint64_t pair_key(TokenId a, TokenId b) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    }
    TokenId find_word(std::string_view s, const std::vector<std::string>& id_bytes) const {
        const uint64_t h = hash_bytes(s);
        for (size_t i = h & (words.size() - 1);; i = (i + 1) & (words.size() - 1)) {
            const Word& w = words[i];
            if (w.id < 0) return -1;
            if (w.hash == h && id_bytes[w.id] == s) return w.id;
        }
    }
    void insert_word(std::string_view s, TokenId id) {
        const uint64_t h = hash_bytes(s);
        size_t i = h & (words.size() - 1);
        while (words[i].id >= 0) i = (i + 1) & (words.size() - 1);
        words[i] = {h, id};
    }
    const Merge* find_pair(TokenId a, TokenId b) const {
        const uint64_t key = pair_key(a, b);
        for (size_t i = mix(key) & (pairs.size() - 1);; i = (i + 1) & (pairs.size() - 1)) {
            if (pairs[i].key == key) return &pairs[i];
            if (pairs[i].key == UINT64_MAX) return nullptr;
        }
    }
    void insert_pair(TokenId a, TokenId b, uint32_t rank, TokenId merged) {
        const uint64_t key = pair_key(a, b);
        size_t i = mix(key) & (pairs.size() - 1);
        while (pairs[i].key != UINT64_MAX && pairs[i].key != key) i = (i + 1) & (pairs.size() - 1);
        if (pairs[i].key == key) return;  // a repeated merge: the first (lowest rank) stands
        pairs[i] = {key, rank, merged};
    }
};

BpeTokenizer::BpeTokenizer(std::vector<std::pair<std::string, TokenId>> vocab,
                           const std::vector<std::pair<std::string, std::string>>& merges,
                           std::map<std::string, TokenId> specials, const std::string& source)
    : tables_(std::make_unique<Tables>()) {
    specials_ = std::move(specials);
    // The ids index id_bytes_: they must be 0 .. n-1 for the n tokens, each once, before any is
    // used (a negative special id once wrote before the table's start and corrupted the heap).
    const size_t n = vocab.size() + specials_.size();
    id_bytes_.assign(n, std::string());
    std::vector<bool> used(n, false);
    const auto claim = [&](TokenId id, const std::string& shown) {
        if (id < 0 || static_cast<size_t>(id) >= n || used[id]) {
            throw InputError(
                fmt::format("{}: token '{}' has id {}, outside [0, {}) or used twice", source, shown, id, n),
                "the vocabulary file is damaged");
        }
        used[id] = true;
    };
    tables_->words.resize(capacity_for(vocab.size()));
    for (auto& [bytes, id] : vocab) {
        claim(id, bytes_to_unicode(bytes));
        tables_->insert_word(bytes, id);
        id_bytes_[id] = std::move(bytes);
    }
    for (const auto& [text, id] : specials_) {
        claim(id, text);
        id_bytes_[id] = text;
    }
    for (int b = 0; b < 256; b++) {
        byte_token_[b] = tables_->find_word(std::string(1, static_cast<char>(b)), id_bytes_);
        if (byte_token_[b] < 0) {
            throw InputError(fmt::format("{}: no token for the single byte 0x{:02x}", source, b),
                             "a byte-level BPE vocabulary must hold all 256 bytes");
        }
    }
    tables_->pairs.resize(capacity_for(merges.size()));
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); rank++) {
        const auto& [left, right] = merges[rank];
        const TokenId a = tables_->find_word(left, id_bytes_), b = tables_->find_word(right, id_bytes_);
        const TokenId m = tables_->find_word(left + right, id_bytes_);
        if (a < 0 || b < 0 || m < 0) {
            throw InputError(fmt::format("{}: merge {} ('{}' + '{}') uses a token not in the vocabulary",
                                         source, rank + 1, bytes_to_unicode(left), bytes_to_unicode(right)),
                             "the merges and the vocabulary do not belong together");
        }
        tables_->insert_pair(a, b, static_cast<uint32_t>(rank), m);
        merges_.emplace_back(a, b);
    }
}

BpeTokenizer::~BpeTokenizer() = default;

void BpeTokenizer::merge_small(std::string_view piece, std::vector<TokenId>& out) const {
    // Pieces are short (a word): arrays and a linear scan for the lowest rank beat a heap.
    constexpr size_t kMax = 64;
    TokenId ids[kMax];
    uint32_t rank[kMax];  // rank[i]: merge of (ids[i], ids[i+1])
    TokenId merged[kMax];
    size_t n = piece.size();
    for (size_t i = 0; i < n; i++) ids[i] = byte_token_[static_cast<uint8_t>(piece[i])];
    const auto look = [&](size_t i) {
        const Tables::Merge* m = tables_->find_pair(ids[i], ids[i + 1]);
        rank[i] = m ? m->rank : kNoMerge;
        merged[i] = m ? m->merged : -1;
    };
    for (size_t i = 0; i + 1 < n; i++) look(i);
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++) {
            if (rank[i] < rank[best]) best = i;
        }
        if (rank[best] == kNoMerge) break;
        ids[best] = merged[best];
        for (size_t i = best + 1; i + 1 < n; i++) {
            ids[i] = ids[i + 1];
            rank[i] = rank[i + 1];
            merged[i] = merged[i + 1];
        }
        n--;
        if (best > 0) look(best - 1);
        if (best + 1 < n) look(best);
    }
    out.insert(out.end(), ids, ids + n);
}

void BpeTokenizer::merge_large(std::string_view piece, std::vector<TokenId>& out) const {
    // Long pieces (runs of spaces, long numbers): a linked list of tokens and a heap of
    // candidate merges ordered by (rank, position); entries made stale by earlier merges are
    // recognised by their token ids and skipped.
    const size_t n = piece.size();
    std::vector<TokenId> id(n);
    std::vector<int64_t> next(n), prev(n);
    for (size_t i = 0; i < n; i++) {
        id[i] = byte_token_[static_cast<uint8_t>(piece[i])];
        next[i] = i + 1 < n ? static_cast<int64_t>(i + 1) : -1;
        prev[i] = static_cast<int64_t>(i) - 1;
    }
    struct Candidate {
        uint32_t rank;
        int64_t left;
        TokenId a, b;
        bool operator>(const Candidate& o) const {
            return rank != o.rank ? rank > o.rank : left > o.left;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    const auto push = [&](int64_t left) {
        if (left < 0 || next[left] < 0) return;
        if (const Tables::Merge* m = tables_->find_pair(id[left], id[next[left]])) {
            heap.push({m->rank, left, id[left], id[next[left]]});
        }
    };
    for (size_t i = 0; i + 1 < n; i++) push(static_cast<int64_t>(i));
    std::vector<bool> alive(n, true);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        const int64_t r = next[c.left];
        if (!alive[c.left] || r < 0 || id[c.left] != c.a || id[r] != c.b) continue;  // stale
        id[c.left] = tables_->find_pair(c.a, c.b)->merged;
        alive[r] = false;
        next[c.left] = next[r];
        if (next[r] >= 0) prev[next[r]] = c.left;
        push(prev[c.left]);
        push(c.left);
    }
    for (int64_t i = 0; i >= 0; i = next[i]) out.push_back(id[i]);
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
    if (piece.size() == 1) {
        out.push_back(byte_token_[static_cast<uint8_t>(piece[0])]);
        return;
    }
    // Most pieces are whole words of the vocabulary: one lookup instead of the merges. (BPE
    // of a token's own bytes yields that token for vocabularies built by merging, as GPT-2's.)
    if (const TokenId whole = tables_->find_word(piece, id_bytes_); whole >= 0) {
        out.push_back(whole);
        return;
    }
    encode_piece_by_merges(piece, out);
}

void BpeTokenizer::encode_piece_by_merges(std::string_view piece, std::vector<TokenId>& out) const {
    if (piece.size() <= 64) {
        merge_small(piece, out);
    } else {
        merge_large(piece, out);
    }
}

std::vector<TokenId> BpeTokenizer::encode_ordinary(std::string_view text) const {
    std::vector<TokenId> out;
    out.reserve(text.size() / 4 + 16);
    pretokenize_gpt2(text, [&](std::string_view piece) { encode_piece(piece, out); });
    return out;
}

std::string BpeTokenizer::decode(std::span<const TokenId> ids) const {
    std::string out;
    for (const TokenId id : ids) {
        if (id < 0 || id >= static_cast<TokenId>(id_bytes_.size())) {
            throw InputError(fmt::format("token id {} is outside the vocabulary [0, {})", id,
                                         id_bytes_.size()),
                             "the ids come from another tokenizer");
        }
        out += id_bytes_[id];
    }
    return out;
}

std::vector<size_t> BpeTokenizer::safe_cuts(std::string_view text, size_t every) const {
    // A space whose preceding character is not white space always starts a new piece, and
    // no piece before it looks past it: cutting there changes nothing.
    std::vector<size_t> cuts;
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    for (size_t target = every; target < text.size(); target += every) {
        size_t p = std::max(target, cuts.empty() ? size_t{1} : cuts.back() + 1);
        for (; p < text.size(); p++) {
            if (s[p] != ' ') continue;
            size_t q = p - 1;  // start of the previous character
            while (q > 0 && (s[q] & 0xC0) == 0x80 && p - q < 4) q--;
            uint32_t cp;
            utf8_decode(s + q, s + p, cp);
            if (char_class(cp) != CharClass::Space) break;
        }
        if (p >= text.size()) break;
        cuts.push_back(p);
    }
    return cuts;
}

TokenId BpeTokenizer::add_special(const std::string& text) {
    if (specials_.contains(text)) throw InputError(fmt::format("{} is already a special token", text));
    const auto id = static_cast<TokenId>(id_bytes_.size());
    id_bytes_.push_back(text);
    specials_[text] = id;
    return id;
}

void BpeTokenizer::save(const std::string& dir) const {
    // {"token": id, ...} in id order, written directly: an ordered_json object inserts in
    // linear time, which is quadratic over 50,000 tokens.
    std::string json_text = "{";
    for (size_t id = 0; id < id_bytes_.size(); id++) {
        const bool special = std::any_of(specials_.begin(), specials_.end(), [&](const auto& s) {
            return s.second == static_cast<TokenId>(id);
        });
        if (id > 0) json_text += ", ";
        json_text += nlohmann::json(special ? id_bytes_[id] : bytes_to_unicode(id_bytes_[id])).dump();
        json_text += ": ";
        json_text += std::to_string(id);
    }
    json_text += "}";
    std::string bpe = "#version: 0.2\n";
    for (const auto& [a, b] : merges_) {
        bpe += bytes_to_unicode(id_bytes_[a]) + " " + bytes_to_unicode(id_bytes_[b]) + "\n";
    }
    std::filesystem::create_directories(dir);
    const std::span<const std::byte> json_parts[] = {std::as_bytes(std::span(json_text))};
    write_file_atomic(dir + "/encoder.json", json_parts);
    const std::span<const std::byte> bpe_parts[] = {std::as_bytes(std::span(bpe))};
    write_file_atomic(dir + "/vocab.bpe", bpe_parts);
    // encoder.json alone marks only <|...|> tokens as special; this names every one ([PAD] too).
    write_text_atomic(dir + "/added_tokens.json", nlohmann::json(specials_).dump(1) + "\n");
}

}  // namespace lmforge
