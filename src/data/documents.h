// The documents `lmforge prepare` reads from its inputs: a text file is one document; each
// line of a .jsonl file is one (the string in its text field); a directory contributes its
// files, walked in sorted order, hidden ones skipped.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_io.h"

namespace lmforge {

struct DocumentSet {
    std::vector<std::string_view> docs;  // into `mapped` or `owned`
    size_t bytes = 0;
    size_t files = 0;
    std::deque<MappedFile> mapped;  // text files, read in place
    std::deque<std::string> owned;  // texts decoded from JSON
};

// InputError naming the file (and line) for a missing or empty file, an empty directory, a
// JSON line that does not parse or lacks the field.
DocumentSet read_documents(const std::vector<std::string>& inputs, const std::string& jsonl_field);

}  // namespace lmforge
