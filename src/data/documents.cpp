#include "data/documents.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "data/jsonl.h"

namespace lmforge {

namespace fs = std::filesystem;

namespace {

bool is_jsonl(const fs::path& p) { return p.extension() == ".jsonl" || p.extension() == ".ndjson"; }

// Files from this size on are read in place (mapped); smaller ones are copied and unmapped,
// since a process may hold only about 65,000 mappings and a corpus of one file per document
// can have more files than that.
constexpr size_t kMapFrom = size_t{1} << 20;

void read_jsonl(const std::string& path, const MappedFile& file, const std::string& field, DocumentSet& set) {
    const std::string_view text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
    size_t found = 0;
    for_each_jsonl(text, path, [&](const nlohmann::json& j, size_t line) {
        std::string doc = jsonl_string(j, field, path, line);
        found++;
        if (doc.empty()) {  // no text: no document (it would be a lone <|endoftext|>)
            set.empty++;
            return;
        }
        set.owned.push_back(std::move(doc));
        set.docs.emplace_back(set.owned.back());
        set.bytes += set.owned.back().size();
    });
    if (found == 0) throw InputError(fmt::format("{}: no documents (empty .jsonl file)", path), "check the input");
}

void read_file(const fs::path& p, const std::string& field, bool in_directory, DocumentSet& set) {
    const std::string path = p.string();
    MappedFile file(path);
    if (file.size() == 0) {
        if (in_directory) {  // one empty file among many is no reason to stop
            set.empty++;
            return;
        }
        throw InputError(fmt::format("{}: empty file", path), "remove it from the inputs");
    }
    set.files++;
    if (is_jsonl(p)) {
        read_jsonl(path, file, field, set);
        return;
    }
    const std::string_view text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
    if (file.size() < kMapFrom) {
        set.owned.emplace_back(text);
        set.docs.emplace_back(set.owned.back());
    } else {
        set.mapped.push_back(std::move(file));
        set.docs.emplace_back(reinterpret_cast<const char*>(set.mapped.back().bytes().data()), set.mapped.back().size());
    }
    set.bytes += text.size();
}

}  // namespace

DocumentSet read_documents(const std::vector<std::string>& inputs, const std::string& jsonl_field) {
    DocumentSet set;
    std::set<fs::path> seen;  // a file named twice (a directory and a file in it) is read once
    const auto read = [&](const fs::path& f, bool in_directory) {
        if (!seen.insert(fs::weakly_canonical(fs::absolute(f))).second) {
            set.repeated++;
            return;
        }
        read_file(f, jsonl_field, in_directory, set);
    };
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
            for (const auto& f : files) read(f, true);
        } else if (fs::exists(p, ec)) {
            read(p, false);
        } else {
            throw InputError(fmt::format("{}: no such file or directory", input), "check the path");
        }
    }
    if (set.empty > 0) log::warn("{} empty files or texts skipped", set.empty);
    if (set.repeated > 0) log::warn("{} files the inputs name more than once, each read once", set.repeated);
    if (set.docs.empty()) throw InputError("the inputs hold no text", "check the inputs");
    return set;
}

}  // namespace lmforge
