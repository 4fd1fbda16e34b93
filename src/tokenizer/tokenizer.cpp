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
    // Each special's next occurrence, searched again only once the text has passed it: every
    // special scans the text once, however many there are and however often they occur.
    struct Next {
        std::string_view token;
        TokenId id;
        size_t at;
    };
    std::vector<Next> next;
    for (const auto& [s, id] : specials_) {
        if (!s.empty()) next.push_back({s, id, text.find(s)});  // an empty one would match everywhere
    }
    std::vector<TokenId> out;
    size_t at = 0;
    while (at < text.size()) {
        // The earliest special token from here (the longest, if two start together).
        const Next* best = nullptr;
        for (Next& n : next) {
            if (n.at != std::string_view::npos && n.at < at) n.at = text.find(n.token, at);
            if (n.at == std::string_view::npos) continue;
            if (best == nullptr || n.at < best->at || (n.at == best->at && n.token.size() > best->token.size())) best = &n;
        }
        const size_t stop = best == nullptr ? text.size() : best->at;
        if (stop > at) {
            const std::vector<TokenId> part = encode_ordinary(text.substr(at, stop - at));
            out.insert(out.end(), part.begin(), part.end());
        }
        if (best == nullptr) break;
        out.push_back(best->id);
        at = best->at + best->token.size();
    }
    return out;
}

}  // namespace lmforge
