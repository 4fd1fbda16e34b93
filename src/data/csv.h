// CSV as RFC 4180 writes it: comma-separated fields, optionally quoted with '"' (a quote
// inside doubled), quoted fields may hold commas and line breaks; LF or CRLF line ends.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lmforge {

struct CsvRow {
    std::vector<std::string> fields;
    size_t line = 0;  // where the row starts: a quoted field may span lines
};

// The rows of text, the first being the header. InputError naming `path` and the line for
// an unterminated quote, a stray quote, or a row whose field count differs from the header's.
std::vector<CsvRow> parse_csv(std::string_view text, const std::string& path);

}  // namespace lmforge
