// A tokenizer as users name it on the command line and in configs: "gpt2" is GPT-2's BPE from
// the data home, fetched there first if missing (the tokenizer library itself never fetches);
// anything else is a tokenizer directory or file (tokenizer/tokenizer_io.h).
#pragma once

#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace lmforge {

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& spec, const std::string& data_home);

}  // namespace lmforge
