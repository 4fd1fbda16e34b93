// Which lmforge this is: the version of CMakeLists.txt's project() and the git commit the
// build came from, for --version, the training log and run metadata.
#pragma once

#include <string>

namespace lmforge {

const char* version();     // "0.1.0"
const char* git_commit();  // "1a2b3c4d5e6f", "...-dirty" with uncommitted changes, or "unknown"
std::string version_line();  // "lmforge 0.1.0 (commit 1a2b3c4d5e6f)"

}  // namespace lmforge
