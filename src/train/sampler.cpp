#include "train/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace lmforge {

int32_t sample_token(const float* logits, int64_t V, const SampleOptions& opts, Rng& rng,
                     std::vector<std::pair<float, int32_t>>& scratch) {
    if (opts.temperature <= 0) {  // greedy: the first of the largest
        return static_cast<int32_t>(std::max_element(logits, logits + V) - logits);
    }
    scratch.resize(static_cast<size_t>(V));
    for (int64_t v = 0; v < V; v++) scratch[v] = {logits[v], static_cast<int32_t>(v)};
    // Largest first; ties by id, so the order never depends on the sort's whims.
    const auto by_logit = [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; };
    size_t keep = scratch.size();
    if (opts.top_k > 0 && static_cast<size_t>(opts.top_k) < keep) {
        keep = static_cast<size_t>(opts.top_k);
        std::partial_sort(scratch.begin(), scratch.begin() + static_cast<ptrdiff_t>(keep), scratch.end(), by_logit);
    } else {
        std::sort(scratch.begin(), scratch.end(), by_logit);
    }
    const double max = scratch[0].first;
    std::vector<double> p(keep);
    double sum = 0;
    for (size_t i = 0; i < keep; i++) sum += p[i] = std::exp((scratch[i].first - max) / opts.temperature);
    if (opts.top_p < 1.0) {  // the smallest prefix whose probability reaches top_p
        double cum = 0;
        size_t n = 0;
        while (n < keep && cum < opts.top_p * sum) cum += p[n++];
        keep = std::max<size_t>(n, 1);
        sum = 0;
        for (size_t i = 0; i < keep; i++) sum += p[i];
    }
    double u = static_cast<double>(rng.uniform()) * sum;
    for (size_t i = 0; i < keep; i++) {
        u -= p[i];
        if (u < 0) return scratch[i].second;
    }
    return scratch[keep - 1].second;
}

int64_t sliding_window_keep(int64_t block_size) { return std::max<int64_t>(1, block_size / 2); }

namespace {

void check_prompt(std::span<const int32_t> prompt, int64_t block_size) {
    if (prompt.empty()) throw InputError("an empty prompt", "start from <|endoftext|> for an unconditional sample");
    if (static_cast<int64_t>(prompt.size()) > block_size) {
        throw InputError(fmt::format("a prompt of {} tokens is longer than the model's context ({} tokens)",
                                     prompt.size(), block_size),
                         "shorten the prompt");
    }
}

}  // namespace

std::vector<int32_t> generate(Decoder& decoder, std::span<const int32_t> prompt, const SampleOptions& opts,
                              Rng& rng, const std::function<void(int32_t)>& on_token) {
    check_prompt(prompt, decoder.capacity());
    decoder.reset();
    const float* logits = nullptr;
    for (const int32_t t : prompt) logits = decoder.step(t);
    std::vector<int32_t> seq(prompt.begin(), prompt.end());
    std::vector<std::pair<float, int32_t>> scratch;
    const int64_t V = decoder.vocab_size(), keep = sliding_window_keep(decoder.capacity());
    for (int64_t i = 0; i < opts.max_new_tokens; i++) {
        const int32_t next = sample_token(logits, V, opts, rng, scratch);
        seq.push_back(next);
        if (on_token) on_token(next);
        if (next == opts.stop_token || i + 1 == opts.max_new_tokens) break;
        if (decoder.position() < decoder.capacity()) {
            logits = decoder.step(next);
            continue;
        }
        decoder.reset();  // the context is full: refill it with the last `keep` tokens
        for (auto t = seq.end() - keep; t != seq.end(); ++t) logits = decoder.step(*t);
    }
    return {seq.begin() + static_cast<ptrdiff_t>(prompt.size()), seq.end()};
}

std::vector<int32_t> generate_without_cache(CausalLm& model, std::span<const int32_t> prompt, const SampleOptions& opts,
                                            Rng& rng) {
    const int64_t block_size = model.context_length(), keep = sliding_window_keep(block_size);
    check_prompt(prompt, block_size);
    std::vector<int32_t> seq(prompt.begin(), prompt.end());
    std::vector<std::pair<float, int32_t>> scratch;
    const int64_t V = model.vocab_size(), Vp = model.padded_vocab();
    int64_t start = 0;  // the window's first token
    for (int64_t i = 0; i < opts.max_new_tokens; i++) {
        const auto T = static_cast<int64_t>(seq.size()) - start;
        const Batch window{.B = 1, .T = T, .inputs = {seq.begin() + start, seq.end()}};
        model.forward(window);
        const int32_t next = sample_token(model.logits() + (T - 1) * Vp, V, opts, rng, scratch);
        seq.push_back(next);
        if (next == opts.stop_token) break;
        if (T == block_size) start = static_cast<int64_t>(seq.size()) - keep;
    }
    return {seq.begin() + static_cast<ptrdiff_t>(prompt.size()), seq.end()};
}

}  // namespace lmforge
