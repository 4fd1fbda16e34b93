// Which position of a padded sequence a classification head reads: its last token that is not
// padding, as transformers' GPT2ForSequenceClassification picks it (the largest t with
// ids[t] != pad; 0 when every token is padding). A causal model's state there has seen the
// whole text and none of the padding after it.
#pragma once

#include <cstdint>
#include <vector>

namespace lmforge {

inline std::vector<int32_t> last_non_pad_positions(const int32_t* ids, int64_t B, int64_t T, int32_t pad) {
    std::vector<int32_t> last(B, 0);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            if (ids[b * T + t] != pad) last[b] = static_cast<int32_t>(t);
    return last;
}

}  // namespace lmforge
