#include "tokenizer/utf8_stream.h"

#include <utility>

namespace lmforge {

namespace {

// The bytes a sequence starting with lead takes (1 for ASCII and for bytes that start none).
size_t sequence_length(unsigned char lead) {
    if ((lead & 0xE0) == 0xC0) return 2;
    if ((lead & 0xF0) == 0xE0) return 3;
    if ((lead & 0xF8) == 0xF0) return 4;
    return 1;
}

// Where the text stops being whole: the start of a last sequence still missing bytes, or the end.
size_t complete_prefix(const std::string& s) {
    // A character takes at most 4 bytes: only the last 3 can start one left incomplete.
    for (size_t back = 1; back <= 3 && back <= s.size(); back++) {
        const auto b = static_cast<unsigned char>(s[s.size() - back]);
        if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back
        return sequence_length(b) > back ? s.size() - back : s.size();
    }
    return s.size();
}

}  // namespace

std::string Utf8Stream::push(std::string_view more) {
    pending_.append(more);
    const size_t whole = complete_prefix(pending_);
    std::string out = pending_.substr(0, whole);
    pending_.erase(0, whole);
    return out;
}

std::string Utf8Stream::finish() { return std::exchange(pending_, std::string()); }

}  // namespace lmforge
