// Streamed text is held back at a character cut in two and goes out whole once complete;
// ASCII and invalid bytes pass at once; what is left at the end comes out by finish().
#include "tokenizer/utf8_stream.h"

#include <gtest/gtest.h>

namespace lmforge {
namespace {

TEST(Utf8Stream, HoldsACutCharacterUntilItIsWhole) {
    Utf8Stream s;
    EXPECT_EQ(s.push("caf\xC3"), "caf");  // é's first byte alone
    EXPECT_EQ(s.push("\xA9!"), "\xC3\xA9!");
    const std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600, 4 bytes
    EXPECT_EQ(s.push(emoji.substr(0, 1)), "");
    EXPECT_EQ(s.push(emoji.substr(1, 2)), "");
    EXPECT_EQ(s.push(emoji.substr(3)), emoji);
    EXPECT_EQ(s.finish(), "");
}

TEST(Utf8Stream, PassesAsciiAndStrayBytesAtOnceAndFlushesTheRestAtTheEnd) {
    Utf8Stream s;
    EXPECT_EQ(s.push("plain text"), "plain text");
    EXPECT_EQ(s.push("\xA9\xFF"), "\xA9\xFF");  // a lone continuation byte, a byte no UTF-8 has
    EXPECT_EQ(s.push("x\xE2\x82"), "x");        // € cut after two of its three bytes
    EXPECT_EQ(s.finish(), "\xE2\x82");           // the stream ended: out as they are
    EXPECT_EQ(s.push("\xE2\x82\xAC"), "\xE2\x82\xAC");
}

}  // namespace
}  // namespace lmforge
