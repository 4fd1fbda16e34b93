// Loading tokenizers from files (data/tokenizer_spec.h also finds GPT-2's by name, fetching
// it): a spec is
//   DIR     a directory holding encoder.json + vocab.bpe (GPT-2's format, also what
//           `lmforge tokenizer train` writes; added_tokens.json beside them names the special
//           tokens) or tokenizer.json;
//   FILE    a tokenizer.json: Hugging Face's (a byte-level BPE model, with GPT-2's, Llama 3's
//           or SmolLM2's kind of pre-tokenizer; pretokenizer_chain.h) or lmforge's character
//           tokenizer.
// A tokenizer_config.json beside the files may name the bos, eos, pad and unk tokens (roles()).
// What lmforge does not implement (a normalizer, another pre-tokenizer or decoder) is refused
// in one line naming the field, not ignored: it would give other ids than Hugging Face.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace lmforge {

// InputError naming the file (and line or field) for anything that does not parse.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec);

// ADDED_TOKENS, if not "": a {"token": id} file (Hugging Face's added_tokens.json) whose tokens
// are special, whatever they look like; without it only <|...|> tokens are. Every added token
// is special here, also one transformers would match inside ordinary text (special: false in
// its tokenizer_config.json): encode() finds it, encode_ordinary() (prepare) does not.
// InputError for an empty token, an id that is no id, or one that encoder.json gives to
// another token. Every id in either file must be an integer in [0, N), N the tokens the files
// name (encoder.json's entries and the added tokens it lacks); tokenizer.json's likewise.
std::unique_ptr<Tokenizer> load_gpt2_files(const std::string& encoder_json, const std::string& vocab_bpe,
                                           const std::string& added_tokens = "");
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path);

}  // namespace lmforge
