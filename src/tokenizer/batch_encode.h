// Encoding many documents on all threads: long documents are cut at the tokenizer's safe
// cuts into parts of about 128 KB, so one long book and many short e-mails both keep
// every thread busy. The result equals encoding each document alone.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace lmforge {

// ids[d] = tokenizer.encode_ordinary(docs[d]). progress(bytes) is called (from one thread at
// a time) as parts finish, for progress bars; it may be empty.
std::vector<std::vector<TokenId>> encode_batch(const Tokenizer& tokenizer,
                                               const std::vector<std::string_view>& docs,
                                               const std::function<void(size_t)>& progress = {},
                                               size_t part_bytes = size_t{1} << 17);

}  // namespace lmforge
