// The data home: where datasets and tokenizer files are kept, from the first of --dir,
// $LMFORGE_HOME and ~/.cache/lmforge (core/home_dir.h).
#pragma once

#include <string>

namespace lmforge {

std::string data_home(const std::string& dir_flag = {});

}  // namespace lmforge
