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
#include "tokenizer/pretokenizer_chain.h"

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
                           std::map<std::string, TokenId> specials, const std::string& source, BpeOptions options)
    : tables_(std::make_unique<Tables>()),
      pretokenizer_(std::move(options.pretokenizer)),
      ignore_merges_(options.ignore_merges),
      added_(std::move(options.added)) {
    specials_ = std::move(specials);
    // The ids index id_bytes_: they must be 0 .. n-1 for the n tokens, each once, before any is
    // used (a negative special id once wrote before the table's start and corrupted the heap).
    const size_t n = vocab.size() + specials_.size() + added_.size();
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
    for (const auto* tokens : {&specials_, &added_}) {
        for (const auto& [text, id] : *tokens) {
            claim(id, text);
            id_bytes_[id] = text;
        }
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
    if (!ignore_merges_) find_tokens_merging_gives();
}

void BpeTokenizer::find_tokens_merging_gives() {
    // Without ignore_merges, a piece that is a token is still that token wherever merging its
    // bytes gives it back, as it does for nearly all: those keep the one-lookup fast path.
    whole_is_merged_.assign(id_bytes_.size(), false);
    std::vector<TokenId> ids;
    for (size_t id = 0; id < id_bytes_.size(); id++) {
        const std::string& bytes = id_bytes_[id];
        if (bytes.empty() || tables_->find_word(bytes, id_bytes_) != static_cast<TokenId>(id)) continue;
        ids.clear();
        encode_piece_by_merges(bytes, ids);
        whole_is_merged_[id] = ids.size() == 1 && ids[0] == static_cast<TokenId>(id);
        all_whole_are_merged_ = all_whole_are_merged_ && whole_is_merged_[id];
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
    if (const TokenId whole = tables_->find_word(piece, id_bytes_);
        whole >= 0 && (ignore_merges_ || whole_is_merged_[whole])) {
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

void BpeTokenizer::encode_text(std::string_view text, std::vector<TokenId>& out) const {
    if (pretokenizer_) {
        pretokenizer_->split(text, [&](std::string_view piece) { encode_piece(piece, out); });
    } else {
        pretokenize_gpt2(text, [&](std::string_view piece) { encode_piece(piece, out); });
    }
}

std::vector<TokenId> BpeTokenizer::encode_ordinary(std::string_view text) const {
    std::vector<TokenId> out;
    out.reserve(text.size() / 4 + 16);
    if (added_.empty()) {
        encode_text(text, out);
    } else {
        split_on_tokens(
            text, added_, [&](std::string_view part) { encode_text(part, out); },
            [&](TokenId id) { out.push_back(id); });
    }
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
    // no piece before it looks past it: cutting there changes nothing, unless an added token
    // spans it. Patterns lmforge cannot reason about get no cuts: one thread per document.
    if (pretokenizer_ && !pretokenizer_->cuts_at_spaces()) return {};
    const auto inside_added = [&](size_t p) {
        for (const auto& [token, id] : added_) {
            // Occurrences that start before p and end after it lie within this window.
            const size_t from = p >= token.size() ? p - token.size() + 1 : 0;
            const std::string_view window = text.substr(from, p - from + token.size() - 1);
            if (token.size() > 1 && window.find(token) != std::string_view::npos) return true;
        }
        return false;
    };
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
            if (char_class(cp) != CharClass::Space && !inside_added(p)) break;
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

namespace {

std::string json_string(const std::string& text) {
    // Byte-level tokens are ASCII-safe text; a special token of other bytes is written as
    // best it can be rather than stopping the save.
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void BpeTokenizer::save(const std::string& dir) const {
    std::filesystem::create_directories(dir);
    if (!roles_.empty()) {
        nlohmann::json config = nlohmann::json::object();
        for (const auto& [role, id] : roles_) config[role] = nlohmann::json::parse(json_string(id_bytes_[id]));
        write_text_atomic(dir + "/tokenizer_config.json", config.dump(2) + "\n");
    }
    // GPT-2's files mean GPT-2's pre-tokenizer, every added token special and whole-token
    // lookup: anything else is kept in a tokenizer.json, which load_tokenizer() reads back.
    if (pretokenizer_ || !added_.empty() || !(ignore_merges_ || all_whole_are_merged_)) {
        save_tokenizer_json(dir);
        return;
    }
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
    const std::span<const std::byte> json_parts[] = {std::as_bytes(std::span(json_text))};
    write_file_atomic(dir + "/encoder.json", json_parts);
    const std::span<const std::byte> bpe_parts[] = {std::as_bytes(std::span(bpe))};
    write_file_atomic(dir + "/vocab.bpe", bpe_parts);
    // encoder.json alone marks only <|...|> tokens as special; this names every one ([PAD] too).
    write_text_atomic(dir + "/added_tokens.json", nlohmann::json(specials_).dump(1) + "\n");
}

void BpeTokenizer::save_tokenizer_json(const std::string& dir) const {
    // Hugging Face's layout, as the tokenizers library writes it; vocab and merges written
    // directly, for the same reason as encoder.json above.
    std::map<TokenId, std::pair<const std::string*, bool>> added;  // id -> content, special
    for (const auto& [text, id] : specials_) added[id] = {&text, true};
    for (const auto& [text, id] : added_) added[id] = {&text, false};
    std::string added_json = "[";
    for (const auto& [id, token] : added) {
        if (added_json.size() > 1) added_json += ", ";
        added_json += fmt::format(R"({{"id": {}, "content": {}, "single_word": false, "lstrip": false, )"
                                  R"("rstrip": false, "normalized": {}, "special": {}}})",
                                  id, json_string(*token.first), !token.second, token.second);
    }
    added_json += "]";
    std::string vocab = "{";
    for (size_t id = 0; id < id_bytes_.size(); id++) {
        if (added.contains(static_cast<TokenId>(id))) continue;
        if (vocab.size() > 1) vocab += ", ";
        vocab += json_string(bytes_to_unicode(id_bytes_[id])) + ": " + std::to_string(id);
    }
    vocab += "}";
    std::string merges = "[";
    for (const auto& [a, b] : merges_) {
        if (merges.size() > 1) merges += ", ";
        // Appended part by part: "[" + a temporary string trips GCC 12's -Wrestrict.
        merges += '[';
        merges += json_string(bytes_to_unicode(id_bytes_[a]));
        merges += ", ";
        merges += json_string(bytes_to_unicode(id_bytes_[b]));
        merges += ']';
    }
    merges += "]";
    const std::string pre =
        pretokenizer_ ? pretokenizer_->json_text()
                      : R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, )"
                        R"("use_regex": true})";
    const std::string text = fmt::format(
        R"({{"version": "1.0", "truncation": null, "padding": null, "added_tokens": {}, "normalizer": null, )"
        R"("pre_tokenizer": {}, "post_processor": null, )"
        R"("decoder": {{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}}, )"
        R"("model": {{"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, )"
        R"("end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": {}, )"
        R"("vocab": {}, "merges": {}}}}})",
        added_json, pre, ignore_merges_, vocab, merges);
    write_text_atomic(dir + "/tokenizer.json", text + "\n");
}

}  // namespace lmforge
