#include "data/prepare_record.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "data/shard.h"
#include "io/json_fields.h"

namespace lmforge {

namespace {

std::string record_path(const std::string& dir) { return (std::filesystem::path(dir) / "prepare.json").string(); }

// dir's prepare.json, or null if it has none.
nlohmann::json read_record(const std::string& dir) {
    const std::string path = record_path(dir);
    return std::filesystem::exists(path) ? read_json_file(path) : nlohmann::json();
}

}  // namespace

int64_t data_vocab_size(const std::string& dir) {
    const nlohmann::json j = read_record(dir);
    if (!j.is_object() || !j.contains("vocab_size")) return 0;
    return json_int(j, "vocab_size", 1, kMaxShardVocab, record_path(dir));
}

int32_t data_eot_id(const std::string& dir) {
    const nlohmann::json j = read_record(dir);
    if (!j.is_object() || !j.contains("eot_id") || j["eot_id"].is_null()) return -1;
    const int64_t vocab = data_vocab_size(dir);
    return static_cast<int32_t>(json_int(j, "eot_id", 0, (vocab > 0 ? vocab : kMaxShardVocab) - 1, record_path(dir)));
}

}  // namespace lmforge
