#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <string>

namespace lmforge {

namespace {

struct Range {
    uint32_t first, last;
    CharClass cls;
};

constexpr Range kRanges[] = {
#include "tokenizer/unicode_ranges.inc"
};

// The Basic Multilingual Plane as a table, built once: one load per character there.
const std::array<CharClass, 0x10000>& bmp_table() {
    static const auto table = [] {
        std::array<CharClass, 0x10000> t{};
        for (const Range& r : kRanges) {
            for (uint32_t cp = r.first; cp <= r.last && cp < 0x10000; cp++) t[cp] = r.cls;
        }
        return t;
    }();
    return table;
}

}  // namespace

CharClass char_class(uint32_t cp) {
    if (cp < 0x10000) return bmp_table()[cp];
    if (cp > 0x10FFFF) return CharClass::Other;
    const Range* r = std::upper_bound(std::begin(kRanges), std::end(kRanges), cp,
                                      [](uint32_t c, const Range& x) { return c < x.first; });
    if (r == std::begin(kRanges)) return CharClass::Other;
    --r;
    return cp <= r->last ? r->cls : CharClass::Other;
}

void utf8_append(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

}  // namespace lmforge
