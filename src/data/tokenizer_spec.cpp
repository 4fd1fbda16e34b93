#include "data/tokenizer_spec.h"

#include "data/recipes.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge {

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& spec, const std::string& data_home) {
    if (spec == "gpt2") {
        const std::string dir = ensure_dataset(find_recipe("gpt2-tokenizer"), data_home);
        return load_gpt2_files(dir + "/encoder.json", dir + "/vocab.bpe");
    }
    return load_tokenizer(spec);
}

}  // namespace lmforge
