#include "data/documents.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "data/jsonl.h"

namespace lmforge {

namespace fs = std::filesystem;

namespace {

bool is_jsonl(const fs::path& p) { return p.extension() == ".jsonl" || p.extension() == ".ndjson"; }

void read_jsonl(const std::string& path, const MappedFile& file, const std::string& field, DocumentSet& set) {
    const std::string_view text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
    size_t found = 0;
    for_each_jsonl(text, path, [&](const nlohmann::json& j, size_t line) {
        set.owned.push_back(jsonl_string(j, field, path, line));
        set.docs.emplace_back(set.owned.back());
        set.bytes += set.owned.back().size();
        found++;
    });
    if (found == 0) throw InputError(fmt::format("{}: no documents (empty .jsonl file)", path), "check the input");
}

void read_file(const fs::path& p, const std::string& field, DocumentSet& set) {
    const std::string path = p.string();
    set.mapped.emplace_back(path);
    const MappedFile& file = set.mapped.back();
    if (file.size() == 0) throw InputError(fmt::format("{}: empty file", path), "remove it from the inputs");
    set.files++;
    if (is_jsonl(p)) {
        read_jsonl(path, file, field, set);
        return;
    }
    set.docs.emplace_back(reinterpret_cast<const char*>(file.bytes().data()), file.size());
    set.bytes += file.size();
}

}  // namespace

DocumentSet read_documents(const std::vector<std::string>& inputs, const std::string& jsonl_field) {
    DocumentSet set;
    for (const std::string& input : inputs) {
        const fs::path p(input);
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            // Hidden files and everything under hidden directories (.git, .ipynb_checkpoints)
            // are not part of a corpus.
            std::vector<fs::path> files;
            for (auto it = fs::recursive_directory_iterator(p); it != fs::recursive_directory_iterator(); ++it) {
                const std::string name = it->path().filename().string();
                if (!name.empty() && name[0] == '.') {
                    if (it->is_directory()) it.disable_recursion_pending();
                    continue;
                }
                if (it->is_regular_file()) files.push_back(it->path());
            }
            if (files.empty()) throw InputError(fmt::format("{}: directory holds no files", input), "check the input");
            std::sort(files.begin(), files.end());
            for (const auto& f : files) read_file(f, jsonl_field, set);
        } else if (fs::exists(p, ec)) {
            read_file(p, jsonl_field, set);
        } else {
            throw InputError(fmt::format("{}: no such file or directory", input), "check the path");
        }
    }
    return set;
}

}  // namespace lmforge
