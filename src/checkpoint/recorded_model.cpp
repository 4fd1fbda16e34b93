#include "checkpoint/recorded_model.h"

#include <fmt/format.h>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "model/bert.h"
#include "model/gpt2.h"
#include "model/llama.h"

namespace lmforge {

std::unique_ptr<Model> load_recorded_model(const std::string& path, backend::Gemm& gemm, Precision precision) {
    const std::string arch = read_model_arch(path);
    std::unique_ptr<Model> model;
    if (is_bert_family(arch)) {
        model = std::make_unique<Bert>(read_bert_config(path), gemm, precision);
    } else if (arch == "llama") {
        model = std::make_unique<Llama>(read_llama_config(path), gemm, precision);
    } else {
        model = std::make_unique<Gpt2>(read_model_config(path), gemm, precision);
    }
    load_model_weights(*model, path);
    return model;
}

std::unique_ptr<CausalLm> load_recorded_causal_lm(const std::string& path, backend::Gemm& gemm, const char* command,
                                                  Precision precision) {
    std::unique_ptr<Model> model = load_recorded_model(path, gemm, precision);
    auto* lm = dynamic_cast<CausalLm*>(model.get());
    if (lm == nullptr) {
        throw InputError(fmt::format("{}: a {} encoder; {} needs a causal language model (GPT-2, Llama)", path,
                                     read_model_arch(path), command));
    }
    model.release();
    return std::unique_ptr<CausalLm>(lm);
}

}  // namespace lmforge
