#include "data/shard_check.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "data/dataloader.h"
#include "data/shard.h"

namespace lmforge {

namespace fs = std::filesystem;

DataCheck check_shards(const std::string& dir, int64_t vocab_size) {
    DataCheck c;
    c.vocab_size = vocab_size;
    const fs::path record = fs::path(dir) / "prepare.json";
    if (c.vocab_size == 0 && fs::exists(record)) {
        const MappedFile f(record.string());
        const auto j = nlohmann::json::parse(reinterpret_cast<const char*>(f.bytes().data()),
                                             reinterpret_cast<const char*>(f.bytes().data()) + f.size(), nullptr, false);
        if (j.is_object() && j.contains("vocab_size")) c.vocab_size = j["vocab_size"].get<int64_t>();
    }
    bool any = false;
    for (const std::string split : {"train", "val"}) {
        std::vector<std::string> paths;
        try {
            paths = find_shards(dir, split);
        } catch (const InputError&) {
            continue;  // a split may be absent; no shards at all is reported below
        }
        for (const std::string& p : paths) {
            const Shard s(p);
            if (c.vocab_size > 0) s.check_vocab(c.vocab_size);
            c.split_tokens[split] += static_cast<int64_t>(s.tokens().size());
            c.split_shards[split]++;
            c.shards++;
            any = true;
        }
    }
    if (!any) find_shards(dir, "train");  // throws the one-line error naming dir
    return c;
}

}  // namespace lmforge
