#include "core/home_dir.h"

#include <cstdlib>

namespace lmforge {

std::string lmforge_home() {
    if (const char* env = std::getenv("LMFORGE_HOME"); env != nullptr && *env != '\0') return env;
    const char* home = std::getenv("HOME");
    return std::string(home != nullptr && *home != '\0' ? home : ".") + "/.cache/lmforge";
}

}  // namespace lmforge
