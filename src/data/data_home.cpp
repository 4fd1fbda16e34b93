#include "data/data_home.h"

#include <cstdlib>

namespace lmforge {

std::string data_home(const std::string& dir_flag) {
    if (!dir_flag.empty()) return dir_flag;
    if (const char* env = std::getenv("LMFORGE_HOME"); env != nullptr && *env != '\0') return env;
    const char* home = std::getenv("HOME");
    return std::string(home != nullptr && *home != '\0' ? home : ".") + "/.cache/lmforge";
}

}  // namespace lmforge
