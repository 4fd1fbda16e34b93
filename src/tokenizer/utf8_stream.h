// Text streamed token by token: a byte-level token may end inside a multi-byte character (an
// accent, an emoji), and printing its bytes alone shows a replacement character until the
// rest arrives, if ever. Utf8Stream holds back an incomplete sequence at the end until the
// bytes that complete it come; invalid bytes pass through at once, as they are.
#pragma once

#include <string>
#include <string_view>

namespace lmforge {

class Utf8Stream {
public:
    // The pending bytes and `more`, up to the last complete character; the rest is kept.
    std::string push(std::string_view more);
    // Whatever is still held back (an incomplete sequence at the end of the stream).
    std::string finish();

private:
    std::string pending_;
};

}  // namespace lmforge
