#include "data/jsonl.h"

#include <fmt/format.h>

#include "core/error.h"
#include "io/json_fields.h"

namespace lmforge {

void for_each_jsonl(std::string_view text, const std::string& where,
                    const std::function<void(const nlohmann::json&, size_t)>& fn) {
    size_t line_no = 0;
    for (size_t at = 0; at < text.size();) {
        const size_t end = std::min(text.find('\n', at), text.size());
        const std::string_view line = text.substr(at, end - at);
        at = end + 1;
        line_no++;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::parse_error& e) {
            throw InputError(fmt::format("{}:{}: not valid JSON (at byte {} of the line)", where, line_no, e.byte),
                             "each line must be one JSON object");
        } catch (const nlohmann::json::out_of_range& e) {  // a number beyond a double's range, 1e400
            throw InputError(fmt::format("{}:{}: not valid JSON (a number out of range: {})", where, line_no,
                                         json_error_text(e)),
                             "each line must be one JSON object");
        }
        if (!j.is_object()) throw InputError(fmt::format("{}:{}: not a JSON object", where, line_no));
        fn(j, line_no);
    }
}

std::string jsonl_string(const nlohmann::json& object, const std::string& field, const std::string& where,
                         size_t line) {
    const auto it = object.find(field);
    if (it == object.end() || !it->is_string()) {
        throw InputError(fmt::format("{}:{}: no string field \"{}\"", where, line, field),
                         "see the command's --help for a flag that names the field");
    }
    return it->get<std::string>();
}

}  // namespace lmforge
