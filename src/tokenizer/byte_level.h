// GPT-2's byte-level alphabet: every byte is shown as a printable Unicode character, so that
// encoder.json and vocab.bpe can hold any byte sequence as text. Bytes 33-126, 161-172 and
// 174-255 stand for themselves; the other 68 are shifted to U+0100 and up, in order.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lmforge {

// The code point that stands for byte b.
uint32_t byte_to_unicode(uint8_t b);

// The bytes a token written in the byte-level alphabet stands for; nullopt if a character is
// not in the alphabet.
std::optional<std::string> unicode_to_bytes(std::string_view token);

// The token written in the byte-level alphabet.
std::string bytes_to_unicode(std::string_view bytes);

}  // namespace lmforge
