// The tokenizer a run saved beside its checkpoints: a "tokenizer" directory in the checkpoint's
// directory (an imported checkpoint keeps its own) or in the run directory that holds it
// (runs/<name>/tokenizer beside runs/<name>/best and runs/<name>/checkpoints/step_000400). No
// further up: a tokenizer found there would belong to something else.
#pragma once

#include <filesystem>
#include <string>

namespace lmforge::cli {

// The directory, or "" when there is none.
inline std::string find_run_tokenizer(const std::string& checkpoint) {
    namespace fs = std::filesystem;
    const fs::path own = fs::absolute(checkpoint).lexically_normal();
    const fs::path dir = own.has_filename() ? own : own.parent_path();  // "ckpt/" is "ckpt"
    const fs::path run = dir.parent_path().filename() == "checkpoints" ? dir.parent_path().parent_path() : dir.parent_path();
    for (const fs::path& p : {dir, run}) {
        if (fs::is_directory(p / "tokenizer")) return (p / "tokenizer").string();
    }
    return "";
}

}  // namespace lmforge::cli
