#include "io/json_fields.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "core/file_io.h"

namespace lmforge {

namespace {

const nlohmann::json& field(const nlohmann::json& j, const std::string& key, const std::string& file) {
    if (!j.is_object() || !j.contains(key)) throw InputError(fmt::format("{}: no field \"{}\"", file, key));
    return j.at(key);
}

[[noreturn]] void bad(const std::string& file, const std::string& key, const nlohmann::json& v, const std::string& want) {
    throw InputError(fmt::format("{}: \"{}\" is {}, not {}", file, key, v.dump(), want),
                     "the file is damaged or was edited; restore it or use another");
}

}  // namespace

int64_t json_int(const nlohmann::json& j, const std::string& key, int64_t lo, int64_t hi, const std::string& file) {
    const nlohmann::json& v = field(j, key, file);
    const std::string want = fmt::format("a whole number in [{}, {}]", lo, hi);
    // nlohmann holds every integer that is not negative as unsigned: 2^63 and past, too.
    if (!v.is_number_integer()) bad(file, key, v, want);
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) bad(file, key, v, want);
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) bad(file, key, v, want);
    return x;
}

double json_number(const nlohmann::json& j, const std::string& key, double lo, double hi, const std::string& file) {
    const nlohmann::json& v = field(j, key, file);
    const std::string want = fmt::format("a number in [{:g}, {:g}]", lo, hi);
    if (!v.is_number()) bad(file, key, v, want);
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) bad(file, key, v, want);
    return x;
}

double json_number_or(const nlohmann::json& j, const std::string& key, double lo, double hi, double if_null,
                      const std::string& file) {
    if (field(j, key, file).is_null()) return if_null;
    return json_number(j, key, lo, hi, file);
}

nlohmann::json::parser_callback_t json_depth_limit(const std::string& file) {
    return [file](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxJsonDepth) {
            throw InputError(fmt::format("{}: JSON nested deeper than {} levels", file, kMaxJsonDepth),
                             "the file is damaged or of another format");
        }
        return true;
    };
}

nlohmann::json read_json_file(const std::string& path) {
    const MappedFile file(path);
    const auto* p = reinterpret_cast<const char*>(file.bytes().data());
    try {
        return nlohmann::json::parse(p, p + file.size(), json_depth_limit(path));
    } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e400
        throw InputError(fmt::format("{}: not valid JSON ({})", path, json_error_text(e)),
                         "the file is damaged or of another format");
    }
}

std::string json_error_text(const nlohmann::json::exception& e) {
    const std::string what = e.what();
    const size_t tag = what.find("] ");
    return tag == std::string::npos ? what : what.substr(tag + 2);
}

}  // namespace lmforge
