#include "tokenizer/bpe_trainer.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <queue>
#include <unordered_map>

#include "core/error.h"
#include "core/timer.h"
#include "tokenizer/pretokenizer.h"

namespace lmforge {

namespace {

using Pair = uint64_t;  // (left << 32) | right
Pair pair_of(int32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }
int32_t left_of(Pair p) { return static_cast<int32_t>(p >> 32); }
int32_t right_of(Pair p) { return static_cast<int32_t>(p & 0xffffffffu); }

// Distinct words of all texts with their counts, counted per thread and then merged.
std::unordered_map<std::string, int64_t> count_words(const std::vector<std::string_view>& texts) {
    std::vector<std::unordered_map<std::string, int64_t>> partial(omp_get_max_threads());
#pragma omp parallel for schedule(dynamic)
    for (size_t i = 0; i < texts.size(); i++) {
        auto& counts = partial[omp_get_thread_num()];
        pretokenize_gpt2(texts[i], [&](std::string_view piece) { counts[std::string(piece)]++; });
    }
    std::unordered_map<std::string, int64_t> all = std::move(partial[0]);
    for (size_t t = 1; t < partial.size(); t++) {
        for (auto& [w, c] : partial[t]) all[w] += c;
    }
    return all;
}

// The distinct words of two bytes or more as byte symbols (0..255), with their counts, in
// byte order: the hash map's order would make runs differ.
struct Words {
    std::vector<std::vector<int32_t>> symbols;
    std::vector<int64_t> freq;
};

Words distinct_words(const std::vector<std::string_view>& texts) {
    std::vector<std::pair<std::string, int64_t>> counted;
    for (auto& [w, c] : count_words(texts)) {
        if (w.size() >= 2) counted.emplace_back(w, c);  // a single byte has no pair to merge
    }
    std::sort(counted.begin(), counted.end());  // strings compare as unsigned bytes, as symbols do
    Words words;
    for (const auto& [w, c] : counted) {
        words.symbols.emplace_back(w.begin(), w.end());
        for (auto& s : words.symbols.back()) s = static_cast<uint8_t>(s);
        words.freq.push_back(c);
    }
    return words;
}

// symbols with each adjacent (a, b), taken left to right, replaced by m.
std::vector<int32_t> merged_symbols(const std::vector<int32_t>& symbols, int32_t a, int32_t b, int32_t m) {
    std::vector<int32_t> merged;
    for (size_t i = 0; i < symbols.size(); i++) {
        if (i + 1 < symbols.size() && symbols[i] == a && symbols[i + 1] == b) {
            merged.push_back(m);
            i++;
        } else {
            merged.push_back(symbols[i]);
        }
    }
    return merged;
}

// Every adjacent pair's count over the words, the words that hold it (the lists may go stale)
// and a max-heap of (count, -pair) naming the next merge: the most frequent pair, ties to the
// lowest ids. Heap entries go stale as counts change and are checked against the count when
// popped.
class PairIndex {
public:
    explicit PairIndex(Words& words) : words_(words) {
        for (uint32_t w = 0; w < words_.symbols.size(); w++) add_pairs(w, +1);
        for (const auto& [p, c] : count_) heap_.push({c, -static_cast<int64_t>(p)});
    }

    // The next pair to merge into p; false when no pair occurs twice.
    bool next(Pair& p) {
        while (!heap_.empty()) {
            const auto [c, neg] = heap_.top();
            heap_.pop();
            const auto it = count_.find(static_cast<Pair>(-neg));
            if (it == count_.end() || it->second != c) continue;  // stale
            if (c < 2) return false;  // a pair seen once is no pattern
            p = static_cast<Pair>(-neg);
            return true;
        }
        return false;
    }

    // Replaces p = (a, b) by symbol m in every word that holds it, and recounts.
    void merge(Pair p, int32_t m) {
        const int32_t a = left_of(p), b = right_of(p);
        std::vector<uint32_t> ws = std::move(where_[p]);
        where_.erase(p);
        std::sort(ws.begin(), ws.end());
        ws.erase(std::unique(ws.begin(), ws.end()), ws.end());
        std::unordered_map<Pair, int64_t> touched;
        for (const uint32_t w : ws) {
            auto& s = words_.symbols[w];
            bool has = false;
            for (size_t i = 0; i + 1 < s.size() && !has; i++) has = s[i] == a && s[i + 1] == b;
            if (!has) continue;
            // Every pair of the old word changes count, not only those of the new one: a pair
            // that the merge removes here but that other words still hold needs a fresh entry
            // too, or its stale one is dropped and the pair is never merged.
            for (size_t i = 0; i + 1 < s.size(); i++) touched[pair_of(s[i], s[i + 1])] = 0;
            add_pairs(w, -1);
            s = merged_symbols(s, a, b, m);
            add_pairs(w, +1);
            for (size_t i = 0; i + 1 < s.size(); i++) touched[pair_of(s[i], s[i + 1])] = 0;
        }
        count_.erase(p);
        for (const auto& [q, unused] : touched) {
            const auto cq = count_.find(q);
            if (cq == count_.end()) continue;  // p itself
            if (cq->second > 0) {
                heap_.push({cq->second, -static_cast<int64_t>(q)});
            } else {
                count_.erase(cq);
            }
        }
    }

private:
    void add_pairs(uint32_t w, int64_t sign) {
        const auto& s = words_.symbols[w];
        for (size_t i = 0; i + 1 < s.size(); i++) {
            const Pair p = pair_of(s[i], s[i + 1]);
            count_[p] += sign * words_.freq[w];
            if (sign > 0) where_[p].push_back(w);
        }
    }

    Words& words_;
    std::unordered_map<Pair, int64_t> count_;
    std::unordered_map<Pair, std::vector<uint32_t>> where_;
    std::priority_queue<std::pair<int64_t, int64_t>> heap_;
};

}  // namespace

std::unique_ptr<BpeTokenizer> train_bpe(const std::vector<std::string_view>& texts, int64_t vocab_size,
                                        BpeTrainReport* report) {
    if (vocab_size <= 257 || vocab_size > 65536) {
        throw InputError(fmt::format("--vocab-size {} must lie in 258..65536 (256 bytes, merges, <|endoftext|>)",
                                     vocab_size));
    }
    Timer timer;
    Words words = distinct_words(texts);
    PairIndex pairs(words);
    std::vector<std::string> token_bytes(256);
    std::unordered_map<std::string, int32_t> id_of;
    for (int b = 0; b < 256; b++) {
        token_bytes[b] = std::string(1, static_cast<char>(b));
        id_of[token_bytes[b]] = b;
    }
    std::vector<std::pair<std::string, std::string>> merges;
    Pair p = 0;
    while (static_cast<int64_t>(token_bytes.size()) < vocab_size - 1 && pairs.next(p)) {
        const int32_t a = left_of(p), b = right_of(p);
        // Two merges may spell the same bytes (ab+c, a+bc): the second reuses the token.
        const std::string joined = token_bytes[a] + token_bytes[b];
        const auto [at, fresh] = id_of.emplace(joined, static_cast<int32_t>(token_bytes.size()));
        if (fresh) token_bytes.push_back(joined);
        merges.emplace_back(token_bytes[a], token_bytes[b]);
        pairs.merge(p, at->second);
    }
    std::vector<std::pair<std::string, TokenId>> vocab;
    for (size_t id = 0; id < token_bytes.size(); id++) vocab.emplace_back(token_bytes[id], static_cast<TokenId>(id));
    std::map<std::string, TokenId> specials = {{kEndOfText, static_cast<TokenId>(token_bytes.size())}};
    if (report != nullptr) {
        report->words = static_cast<int64_t>(words.symbols.size());
        report->merges = static_cast<int64_t>(merges.size());
        report->seconds = timer.seconds();
    }
    return std::make_unique<BpeTokenizer>(std::move(vocab), merges, std::move(specials), "trained BPE");
}

}  // namespace lmforge
