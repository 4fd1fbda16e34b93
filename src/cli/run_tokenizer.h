// The tokenizer a run saved beside its checkpoints: the nearest "tokenizer" directory in the
// checkpoint's directory or one of its parents (runs/<name>/tokenizer; an imported
// checkpoint keeps its own).
#pragma once

#include <filesystem>
#include <string>

namespace lmforge::cli {

// The directory, or "" when there is none.
inline std::string find_run_tokenizer(const std::string& checkpoint) {
    namespace fs = std::filesystem;
    for (fs::path p = fs::absolute(checkpoint); p.has_parent_path() && p != p.parent_path(); p = p.parent_path()) {
        if (fs::is_directory(p / "tokenizer")) return (p / "tokenizer").string();
    }
    return "";
}

}  // namespace lmforge::cli
