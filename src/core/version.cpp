#include "core/version.h"

namespace lmforge {

extern const char* const kGitCommit;  // generated at build time (cmake/git_commit.cmake)

const char* version() { return LMFORGE_VERSION; }

const char* git_commit() { return kGitCommit; }

std::string version_line() { return std::string("lmforge ") + version() + " (commit " + git_commit() + ")"; }

}  // namespace lmforge
