// The special tokens a BERT-style encoder needs, which GPT-2's vocabulary lacks: [PAD], [CLS],
// [SEP] and [MASK], appended after a tokenizer's own ids in that order. Token shards stay
// model-agnostic (ordinary ids only); an encoder's trainer frames and masks them with these.
#pragma once

#include <cstdint>

#include "tokenizer/tokenizer.h"

namespace lmforge {

inline constexpr const char* kPadToken = "[PAD]";
inline constexpr const char* kClsToken = "[CLS]";
inline constexpr const char* kSepToken = "[SEP]";
inline constexpr const char* kMaskToken = "[MASK]";

struct EncoderSpecials {
    TokenId pad = 0, cls = 0, sep = 0, mask = 0;
    int64_t vocab_size = 0;  // the tokenizer's ids and these four

    // For a tokenizer of `vocab` ids: the four take ids vocab .. vocab + 3.
    static EncoderSpecials after(int64_t vocab) {
        const auto v = static_cast<TokenId>(vocab);
        return {v, v + 1, v + 2, v + 3, vocab + 4};
    }
    bool is_special(TokenId id) const { return id >= pad && id <= mask; }
};

// Adds the four to the tokenizer's special tokens (encode() then turns "[CLS]" into its id,
// decode() turns the id back, save() writes them). Returns their ids.
EncoderSpecials add_encoder_specials(Tokenizer& tokenizer);

}  // namespace lmforge
