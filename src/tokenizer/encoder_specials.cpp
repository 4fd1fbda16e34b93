#include "tokenizer/encoder_specials.h"

namespace lmforge {

EncoderSpecials add_encoder_specials(Tokenizer& tokenizer) {
    const EncoderSpecials s = EncoderSpecials::after(tokenizer.vocab_size());
    for (const char* text : {kPadToken, kClsToken, kSepToken, kMaskToken}) tokenizer.add_special(text);
    return s;
}

}  // namespace lmforge
