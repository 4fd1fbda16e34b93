#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include "core/error.h"

namespace lmforge {

std::optional<TokenId> Tokenizer::eot_id() const {
    const auto it = specials_.find(kEndOfText);
    if (it == specials_.end()) return std::nullopt;
    return it->second;
}

TokenId Tokenizer::add_special(const std::string& text) {
    throw InputError(fmt::format("a {} tokenizer takes no added special tokens ({})", kind(), text),
                     "use a BPE tokenizer");
}

std::vector<TokenId> Tokenizer::encode(std::string_view text) const {
    std::vector<TokenId> out;
    size_t at = 0;
    while (at < text.size()) {
        // The earliest special token from here (the longest, if two start together).
        size_t best = std::string_view::npos, best_len = 0;
        TokenId best_id = 0;
        for (const auto& [s, id] : specials_) {
            const size_t hit = text.find(s, at);
            if (hit < best || (hit == best && hit != std::string_view::npos && s.size() > best_len)) {
                best = hit;
                best_len = s.size();
                best_id = id;
            }
        }
        const size_t stop = best == std::string_view::npos ? text.size() : best;
        if (stop > at) {
            const std::vector<TokenId> part = encode_ordinary(text.substr(at, stop - at));
            out.insert(out.end(), part.begin(), part.end());
        }
        if (best == std::string_view::npos) break;
        out.push_back(best_id);
        at = best + best_len;
    }
    return out;
}

}  // namespace lmforge
