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

}  // namespace

std::unique_ptr<BpeTokenizer> train_bpe(const std::vector<std::string_view>& texts, int64_t vocab_size,
                                        BpeTrainReport* report) {
    if (vocab_size <= 257 || vocab_size > 65536) {
        throw InputError(fmt::format("--vocab-size {} must lie in 258..65536 (256 bytes, merges, <|endoftext|>)",
                                     vocab_size));
    }
    Timer timer;
    std::vector<std::vector<int32_t>> words;  // symbols of each distinct word
    std::vector<int64_t> freq;
    for (auto& [w, c] : count_words(texts)) {
        if (w.size() < 2) continue;  // a single byte has no pair to merge
        words.emplace_back(w.begin(), w.end());
        for (auto& s : words.back()) s = static_cast<uint8_t>(s);
        freq.push_back(c);
    }
    // Word order must not depend on the hash map's: sort for a deterministic run.
    std::vector<size_t> order(words.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return words[a] < words[b]; });
    {
        std::vector<std::vector<int32_t>> w2;
        std::vector<int64_t> f2;
        for (size_t i : order) {
            w2.push_back(std::move(words[i]));
            f2.push_back(freq[i]);
        }
        words = std::move(w2);
        freq = std::move(f2);
    }

    std::unordered_map<Pair, int64_t> count;
    std::unordered_map<Pair, std::vector<uint32_t>> where;  // words that hold the pair (maybe stale)
    const auto add_pairs = [&](uint32_t w, int64_t sign) {
        const auto& s = words[w];
        for (size_t i = 0; i + 1 < s.size(); i++) {
            const Pair p = pair_of(s[i], s[i + 1]);
            count[p] += sign * freq[w];
            if (sign > 0) where[p].push_back(w);
        }
    };
    for (uint32_t w = 0; w < words.size(); w++) add_pairs(w, +1);
    // Max-heap of (count, -pair): the most frequent pair, ties to the lowest ids. Entries go
    // stale as counts change and are checked against `count` when popped.
    using Entry = std::pair<int64_t, int64_t>;
    std::priority_queue<Entry> heap;
    for (const auto& [p, c] : count) heap.push({c, -static_cast<int64_t>(p)});

    std::vector<std::string> token_bytes(256);
    std::unordered_map<std::string, int32_t> id_of;
    for (int b = 0; b < 256; b++) {
        token_bytes[b] = std::string(1, static_cast<char>(b));
        id_of[token_bytes[b]] = b;
    }
    std::vector<std::pair<std::string, std::string>> merges;
    while (static_cast<int64_t>(token_bytes.size()) < vocab_size - 1 && !heap.empty()) {
        const auto [c, neg] = heap.top();
        heap.pop();
        const auto p = static_cast<Pair>(-neg);
        const auto it = count.find(p);
        if (it == count.end() || it->second != c) continue;  // stale
        if (c < 2) break;  // a pair seen once is no pattern
        const auto a = static_cast<int32_t>(p >> 32), b = static_cast<int32_t>(p & 0xffffffffu);
        // Two merges may spell the same bytes (ab+c, a+bc): the second reuses the token.
        const std::string joined = token_bytes[a] + token_bytes[b];
        const auto [at, fresh] = id_of.emplace(joined, static_cast<int32_t>(token_bytes.size()));
        if (fresh) token_bytes.push_back(joined);
        const int32_t m = at->second;
        merges.emplace_back(token_bytes[a], token_bytes[b]);
        std::vector<uint32_t> ws = std::move(where[p]);
        where.erase(p);
        std::sort(ws.begin(), ws.end());
        ws.erase(std::unique(ws.begin(), ws.end()), ws.end());
        std::unordered_map<Pair, int64_t> touched;
        for (const uint32_t w : ws) {
            auto& s = words[w];
            bool has = false;
            for (size_t i = 0; i + 1 < s.size() && !has; i++) has = s[i] == a && s[i + 1] == b;
            if (!has) continue;
            // Every pair of the old word changes count, not only those of the new one: a pair
            // that the merge removes here but that other words still hold needs a fresh entry
            // too, or its stale one is dropped and the pair is never merged.
            for (size_t i = 0; i + 1 < s.size(); i++) touched[pair_of(s[i], s[i + 1])] = 0;
            add_pairs(w, -1);
            std::vector<int32_t> merged;
            for (size_t i = 0; i < s.size(); i++) {
                if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
                    merged.push_back(m);
                    i++;
                } else {
                    merged.push_back(s[i]);
                }
            }
            s = std::move(merged);
            add_pairs(w, +1);
            for (size_t i = 0; i + 1 < s.size(); i++) touched[pair_of(s[i], s[i + 1])] = 0;
        }
        count.erase(p);
        for (const auto& [q, unused] : touched) {
            const auto cq = count.find(q);
            if (cq == count.end()) continue;  // p itself
            if (cq->second > 0) {
                heap.push({cq->second, -static_cast<int64_t>(q)});
            } else {
                count.erase(cq);
            }
        }
    }
    std::vector<std::pair<std::string, TokenId>> vocab;
    for (size_t id = 0; id < token_bytes.size(); id++) vocab.emplace_back(token_bytes[id], static_cast<TokenId>(id));
    std::map<std::string, TokenId> specials = {{kEndOfText, static_cast<TokenId>(token_bytes.size())}};
    if (report != nullptr) {
        report->words = static_cast<int64_t>(words.size());
        report->merges = static_cast<int64_t>(merges.size());
        report->seconds = timer.seconds();
    }
    return std::make_unique<BpeTokenizer>(std::move(vocab), merges, std::move(specials), "trained BPE");
}

}  // namespace lmforge
