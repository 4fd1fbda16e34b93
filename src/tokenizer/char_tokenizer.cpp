#include "tokenizer/char_tokenizer.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/file_io.h"
#include "tokenizer/unicode.h"

namespace lmforge {

namespace {

// The characters of text: each a code point's bytes, or a single invalid byte.
template <class Fn>
void for_each_char(std::string_view text, Fn&& fn) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const auto* end = p + text.size();
    while (p < end) {
        uint32_t cp;
        const int len = utf8_decode(p, end, cp);
        fn(std::string_view(reinterpret_cast<const char*>(p), len),
           static_cast<size_t>(p - reinterpret_cast<const unsigned char*>(text.data())), cp);
        p += len;
    }
}

// Up to 20 bytes before `offset`, ASCII as it is and other bytes as \xNN: where in the text
// a bad byte lies.
std::string printable_context(std::string_view text, size_t offset) {
    std::string out;
    for (size_t i = offset > 20 ? offset - 20 : 0; i <= offset && i < text.size(); i++) {
        const auto b = static_cast<unsigned char>(text[i]);
        out += b >= 0x20 && b < 0x7f && b != '"' && b != '\\' ? std::string(1, static_cast<char>(b))
                                                              : fmt::format("\\x{:02x}", b);
    }
    return out;
}

}  // namespace

CharTokenizer::CharTokenizer(std::vector<std::string> chars) : chars_(std::move(chars)) {
    for (size_t i = 0; i < chars_.size(); i++) ids_.emplace(chars_[i], static_cast<TokenId>(i));
    specials_[kEndOfText] = static_cast<TokenId>(chars_.size());
}

CharTokenizer CharTokenizer::from_texts(const std::vector<std::string_view>& texts) {
    std::set<std::string, std::less<>> seen;
    for (const std::string_view t : texts) {
        for_each_char(t, [&](std::string_view c, size_t offset, uint32_t cp) {
            // The alphabet is saved as JSON text, which must be UTF-8: a Latin-1 é is refused
            // here, by its place, not later as an internal error.
            if (cp == kInvalidCodePoint) {
                throw InputError(fmt::format("the text is not UTF-8: byte \\x{:02x} at byte {} of a text (\"{}\")",
                                             static_cast<unsigned char>(c[0]), offset,
                                             printable_context(t, offset)),
                                 "the character tokenizer reads UTF-8; convert the text (iconv -f latin1 -t utf-8)");
            }
            if (seen.find(c) == seen.end()) seen.emplace(c);
        });
    }
    return CharTokenizer(std::vector<std::string>(seen.begin(), seen.end()));
}

std::vector<TokenId> CharTokenizer::encode_ordinary(std::string_view text) const {
    std::vector<TokenId> out;
    out.reserve(text.size());
    for_each_char(text, [&](std::string_view c, size_t offset, uint32_t) {
        const auto it = ids_.find(c);
        if (it == ids_.end()) {
            std::string shown;
            for (unsigned char b : c) shown += fmt::format("\\x{:02x}", b);
            throw InputError(fmt::format("character {} at byte {} is not in the character "
                                         "tokenizer's alphabet of {}", shown, offset, chars_.size()),
                             "build the alphabet from text that includes it");
        }
        out.push_back(it->second);
    });
    return out;
}

std::string CharTokenizer::decode(std::span<const TokenId> ids) const {
    std::string out;
    for (const TokenId id : ids) {
        if (id < 0 || id >= vocab_size()) {
            throw InputError(fmt::format("token id {} is outside the vocabulary [0, {})", id, vocab_size()),
                             "the ids come from another tokenizer");
        }
        out += id == static_cast<TokenId>(chars_.size()) ? std::string(kEndOfText) : chars_[id];
    }
    return out;
}

std::vector<size_t> CharTokenizer::safe_cuts(std::string_view text, size_t every) const {
    std::vector<size_t> cuts;  // any character boundary will do
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    for (size_t p = every; p < text.size(); p += every) {
        size_t q = p;
        while (q < text.size() && (s[q] & 0xC0) == 0x80) q++;
        if (q < text.size() && (cuts.empty() || q > cuts.back())) cuts.push_back(q);
    }
    return cuts;
}

void CharTokenizer::save(const std::string& dir) const {
    const nlohmann::json j = {{"lmforge_tokenizer", "char"},
                              {"chars", chars_},
                              {"special_tokens", specials_}};
    const std::string text = j.dump(1) + "\n";
    std::filesystem::create_directories(dir);
    write_text_atomic(dir + "/tokenizer.json", text);
}

}  // namespace lmforge
