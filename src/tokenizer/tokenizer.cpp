#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include "core/error.h"

namespace lmforge {

std::optional<TokenId> Tokenizer::eot_id() const {
    if (const auto it = specials_.find(kEndOfText); it != specials_.end()) return it->second;
    if (const auto it = roles_.find("eos_token"); it != roles_.end()) return it->second;
    return std::nullopt;
}

TokenId Tokenizer::add_special(const std::string& text) {
    throw InputError(fmt::format("a {} tokenizer takes no added special tokens ({})", kind(), text),
                     "use a BPE tokenizer");
}

std::vector<TokenId> Tokenizer::encode(std::string_view text) const {
    std::vector<TokenId> out;
    split_on_tokens(
        text, specials_,
        [&](std::string_view part) {
            const std::vector<TokenId> ids = encode_ordinary(part);
            out.insert(out.end(), ids.begin(), ids.end());
        },
        [&](TokenId id) { out.push_back(id); });
    return out;
}

void Tokenizer::split_on_tokens(std::string_view text, const std::map<std::string, TokenId>& tokens,
                                const std::function<void(std::string_view)>& text_part,
                                const std::function<void(TokenId)>& token) {
    // Each token's next occurrence, searched again only once the text has passed it: every
    // token scans the text once, however many there are and however often they occur.
    struct Next {
        std::string_view token;
        TokenId id;
        size_t at;
    };
    std::vector<Next> next;
    for (const auto& [s, id] : tokens) {
        if (!s.empty()) next.push_back({s, id, text.find(s)});  // an empty one would match everywhere
    }
    size_t at = 0;
    while (at < text.size()) {
        // The earliest token from here (the longest, if two start together).
        const Next* best = nullptr;
        for (Next& n : next) {
            if (n.at != std::string_view::npos && n.at < at) n.at = text.find(n.token, at);
            if (n.at == std::string_view::npos) continue;
            if (best == nullptr || n.at < best->at || (n.at == best->at && n.token.size() > best->token.size())) best = &n;
        }
        const size_t stop = best == nullptr ? text.size() : best->at;
        if (stop > at) text_part(text.substr(at, stop - at));
        if (best == nullptr) break;
        token(best->id);
        at = best->at + best->token.size();
    }
}

}  // namespace lmforge
