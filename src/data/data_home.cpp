#include "data/data_home.h"

#include "core/home_dir.h"

namespace lmforge {

std::string data_home(const std::string& dir_flag) { return dir_flag.empty() ? lmforge_home() : dir_flag; }

}  // namespace lmforge
