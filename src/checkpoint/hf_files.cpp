#include "checkpoint/hf_files.h"

#include <nlohmann/json.hpp>

#include "checkpoint/hf_bert.h"
#include "checkpoint/hf_gpt2.h"
#include "checkpoint/hf_llama.h"
#include "model/bert.h"
#include "model/gpt2.h"
#include "tokenizer/encoder_specials.h"

namespace lmforge {

namespace {

CheckpointFiles gpt2_files(const Gpt2& model, const Tokenizer* tokenizer, const std::vector<std::string>& labels) {
    const nlohmann::json config = hf_gpt2_config(model.config(), tokenizer, labels);
    CheckpointFiles files = {{"config.json", config.dump(2) + "\n"},
                             {"generation_config.json", nlohmann::json{{"bos_token_id", config["bos_token_id"]},
                                                                       {"eos_token_id", config["eos_token_id"]}}
                                                                .dump(2) + "\n"}};
    if (tokenizer != nullptr) {
        for (auto& f : hf_gpt2_tokenizer_files(*tokenizer, model.config().block_size)) files.push_back(std::move(f));
    }
    return files;
}

CheckpointFiles bert_files(const Bert& model, const Tokenizer* tokenizer, const std::vector<std::string>& labels) {
    // lmforge's encoder specials follow the tokenizer's ids, [PAD] first.
    std::optional<int64_t> pad;
    if (tokenizer != nullptr) {
        const EncoderSpecials sp = EncoderSpecials::after(tokenizer->vocab_size());
        if (sp.vocab_size == model.config().vocab_size) pad = sp.pad;
    }
    return {{"config.json", hf_bert_config(model.config(), pad, labels).dump(2) + "\n"}};
}

CheckpointFiles llama_files(const Llama& model, const Tokenizer* tokenizer, const std::vector<std::string>& labels) {
    const nlohmann::json eos = hf_eos_id(tokenizer, model.vocab_size());
    CheckpointFiles files = {{"config.json", hf_llama_config(model.config(), eos, labels).dump(2) + "\n"},
                             {"generation_config.json",
                              nlohmann::json{{"bos_token_id", eos}, {"eos_token_id", eos}}.dump(2) + "\n"}};
    if (tokenizer != nullptr) {
        for (auto& f : hf_gpt2_tokenizer_files(*tokenizer, model.config().block_size)) files.push_back(std::move(f));
    }
    return files;
}

}  // namespace

CheckpointFiles hf_files(const Model& model, const Tokenizer* tokenizer, const std::vector<std::string>& label_names) {
    if (const auto* gpt2 = dynamic_cast<const Gpt2*>(&model)) return gpt2_files(*gpt2, tokenizer, label_names);
    if (const auto* llama = dynamic_cast<const Llama*>(&model)) {
        // A LoRA checkpoint holds adapters, not a model from_pretrained could load: export
        // makes one (--hf, merged) or PEFT's adapter directory (--peft).
        if (llama->adapters_only()) return {};
        return llama_files(*llama, tokenizer, label_names);
    }
    return bert_files(dynamic_cast<const Bert&>(model), tokenizer, label_names);
}

}  // namespace lmforge
