// The documents `lmforge prepare` reads from its inputs: a text file is one document; each
// line of a .jsonl file is one (the string in its text field); a directory contributes its
// files, walked in sorted order, hidden ones skipped (and empty ones, counted). A file the
// inputs name twice (a directory and a file in it) is read once.
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
    size_t empty = 0;     // empty files in directories and empty JSONL texts: skipped
    size_t repeated = 0;  // files the inputs named more than once: read once
    std::deque<MappedFile> mapped;  // large text files, read in place
    std::deque<std::string> owned;  // small text files' contents, texts decoded from JSON
};

// InputError naming the file (and line) for a missing file, an empty file given by name, an
// empty directory, a JSON line that does not parse or lacks the field; InputError if no text
// is left at all. Skipped and repeated files are counted in a warning.
DocumentSet read_documents(const std::vector<std::string>& inputs, const std::string& jsonl_field);

}  // namespace lmforge
