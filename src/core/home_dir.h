// lmforge's own directory for what it keeps between runs (datasets, tokenizer files, the
// machine's measured figures): $LMFORGE_HOME, or ~/.cache/lmforge.
#pragma once

#include <string>

namespace lmforge {

std::string lmforge_home();

}  // namespace lmforge
