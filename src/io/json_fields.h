// Numbers read from JSON that lmforge did not necessarily write itself (a checkpoint's
// state.json may have been edited, damaged or made elsewhere): each is checked for its type and
// range where it is read, and a bad one is an InputError naming the file, the field and the
// value, never a number used as it came.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace lmforge {

// j[key] as a whole number in [lo, hi]: not 1.5, not "3", not 1e30.
int64_t json_int(const nlohmann::json& j, const std::string& key, int64_t lo, int64_t hi, const std::string& file);
// j[key] as a finite number in [lo, hi].
double json_number(const nlohmann::json& j, const std::string& key, double lo, double hi, const std::string& file);
// The same, where null stands for `if_null` (an infinity JSON cannot hold).
double json_number_or(const nlohmann::json& j, const std::string& key, double lo, double hi, double if_null,
                      const std::string& file);

// Deeper than any file lmforge reads needs (tokenizer.json: 4 levels), and shallow enough
// that dump() and ==, which recurse once a level, cannot overflow the stack on a value of it.
constexpr int kMaxJsonDepth = 64;

// A parser callback (json::parse(text, json_depth_limit(file))) that refuses JSON nested deeper
// than kMaxJsonDepth with an InputError naming `file`.
nlohmann::json::parser_callback_t json_depth_limit(const std::string& file);

// The JSON file at path (nested at most kMaxJsonDepth); InputError naming it if it is no JSON.
nlohmann::json read_json_file(const std::string& path);

// nlohmann's message without its "[json.exception.<kind>.<id>] " tag, for messages that name
// the value: "number overflow parsing '1e400'".
std::string json_error_text(const nlohmann::json::exception& e);

// The largest count a file can sensibly hold: 2^53, where doubles stop being whole.
constexpr int64_t kMaxCount = int64_t{1} << 53;

}  // namespace lmforge
