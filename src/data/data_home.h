// The data home: where datasets and tokenizer files are kept, from the first of --dir,
// $LMFORGE_HOME and ~/.cache/lmforge.
#pragma once

#include <string>

namespace lmforge {

std::string data_home(const std::string& dir_flag = {});

}  // namespace lmforge
