// UTF-8 decoding and the three character classes GPT-2's pre-tokenizer distinguishes:
// letters (\p{L}), numbers (\p{N}) and white space (\s, the White_Space property).
#pragma once

#include <cstdint>
#include <string_view>

namespace lmforge {

enum class CharClass : uint8_t { Other, Letter, Number, Space };

// The class of code point cp (any value; invalid ones are Other).
CharClass char_class(uint32_t cp);

// The code point starting at p (p < end) and its length in bytes. A byte that does not start
// a valid, complete, shortest-form sequence decodes alone as kInvalidCodePoint (class Other),
// so any bytes — e-mails carry stray ones — pass through and decode back exactly.
inline constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFF;

inline int utf8_decode(const unsigned char* p, const unsigned char* end, uint32_t& cp) {
    const unsigned char b0 = p[0];
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    int len;
    uint32_t v, min;
    if ((b0 & 0xE0) == 0xC0) {
        len = 2, v = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        len = 3, v = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        len = 4, v = b0 & 0x07, min = 0x10000;
    } else {
        cp = kInvalidCodePoint;
        return 1;
    }
    if (end - p < len) {
        cp = kInvalidCodePoint;
        return 1;
    }
    for (int i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            cp = kInvalidCodePoint;
            return 1;
        }
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        cp = kInvalidCodePoint;
        return 1;
    }
    cp = v;
    return len;
}

// Appends cp's UTF-8 encoding to out.
void utf8_append(uint32_t cp, std::string& out);

}  // namespace lmforge
