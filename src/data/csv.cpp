#include "data/csv.h"

#include <fmt/format.h>

#include "core/error.h"

namespace lmforge {

std::vector<CsvRow> parse_csv(std::string_view text, const std::string& path) {
    // Spreadsheets save "CSV UTF-8" with a byte-order mark, which is no part of the first name.
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    std::vector<CsvRow> rows;
    std::vector<std::string> row;
    std::string field;
    size_t line = 1, row_line = 1;
    bool quoted = false, was_quoted = false;
    const auto end_row = [&] {
        row.push_back(std::move(field));
        field.clear();
        const bool blank = row.size() == 1 && row[0].empty() && !was_quoted;
        if (!blank) {
            if (!rows.empty() && row.size() != rows[0].fields.size()) {
                throw InputError(fmt::format("{}:{}: {} fields, but the header has {}", path, row_line, row.size(),
                                             rows[0].fields.size()),
                                 "quote fields that contain commas");
            }
            rows.push_back({std::move(row), row_line});
        }
        row.clear();
        was_quoted = false;
    };
    for (size_t i = 0; i < text.size(); i++) {
        const char c = text[i];
        if (quoted) {
            if (c == '"') {
                if (i + 1 < text.size() && text[i + 1] == '"') {
                    field += '"';
                    i++;
                } else {
                    quoted = false;
                }
            } else {
                if (c == '\n') line++;
                field += c;
            }
            continue;
        }
        if (c == '"') {
            if (!field.empty()) {
                throw InputError(fmt::format("{}:{}: a quote in the middle of an unquoted field", path, line),
                                 "quote the whole field and double the quotes inside it");
            }
            quoted = was_quoted = true;
        } else if (c == ',') {
            row.push_back(std::move(field));
            field.clear();
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') i++;
            end_row();
            row_line = ++line;
        } else {
            field += c;
        }
    }
    if (quoted) throw InputError(fmt::format("{}:{}: a quoted field is never closed", path, row_line));
    if (!field.empty() || !row.empty()) end_row();
    return rows;
}

}  // namespace lmforge
