#include "tokenizer/byte_level.h"

#include "tokenizer/unicode.h"

namespace lmforge {

namespace {

struct Alphabet {
    std::array<uint32_t, 256> to_cp{};
    std::array<int16_t, 512> to_byte{};  // code point -> byte, -1 if none (all are < 0x144)
};

const Alphabet& alphabet() {
    static const Alphabet a = [] {
        Alphabet t;
        t.to_byte.fill(-1);
        uint32_t shifted = 256;
        for (int b = 0; b < 256; b++) {
            const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
            t.to_cp[b] = printable ? static_cast<uint32_t>(b) : shifted++;
            t.to_byte[t.to_cp[b]] = static_cast<int16_t>(b);
        }
        return t;
    }();
    return a;
}

}  // namespace

uint32_t byte_to_unicode(uint8_t b) { return alphabet().to_cp[b]; }

std::optional<std::string> unicode_to_bytes(std::string_view token) {
    const auto* p = reinterpret_cast<const unsigned char*>(token.data());
    const auto* end = p + token.size();
    std::string out;
    while (p < end) {
        uint32_t cp;
        p += utf8_decode(p, end, cp);
        if (cp >= 512 || alphabet().to_byte[cp] < 0) return std::nullopt;
        out += static_cast<char>(alphabet().to_byte[cp]);
    }
    return out;
}

std::string bytes_to_unicode(std::string_view bytes) {
    std::string out;
    for (unsigned char b : bytes) utf8_append(byte_to_unicode(b), out);
    return out;
}

}  // namespace lmforge
