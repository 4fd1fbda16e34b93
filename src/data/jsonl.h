// JSON Lines: one JSON object per line; blank lines are skipped.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace lmforge {

// Calls fn(object, line number) for each line of text. InputError naming "where:line" for a
// line that is not a JSON object.
void for_each_jsonl(std::string_view text, const std::string& where,
                    const std::function<void(const nlohmann::json&, size_t)>& fn);

// The string `field` of a JSON line's object; InputError naming "where:line" if absent.
std::string jsonl_string(const nlohmann::json& object, const std::string& field, const std::string& where,
                         size_t line);

}  // namespace lmforge
