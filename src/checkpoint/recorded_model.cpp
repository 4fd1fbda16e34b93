#include "checkpoint/recorded_model.h"

#include <fmt/format.h>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "model/bert.h"
#include "model/gpt2.h"
#include "model/llama.h"
#include <nlohmann/json.hpp>

namespace lmforge {

namespace {

// A Llama of the recorded shape; with LoRA, its adapters' options and its frozen base loaded
// from the directory it records.
std::unique_ptr<Llama> make_recorded_llama(const std::string& path, backend::Gemm& gemm, Precision precision) {
    const LlamaConfig cfg = read_llama_config(path);
    const nlohmann::json j = read_model_json(path);
    if (!j.contains("lora")) return std::make_unique<Llama>(cfg, gemm, precision);
    const nlohmann::json& l = j["lora"];
    LoraOptions lora;
    try {
        lora.rank = l.at("rank").get<int64_t>();
        lora.alpha = l.at("alpha").get<double>();
        lora.dropout = l.at("dropout").get<double>();
        lora.targets = LoraOptions::parse_targets(l.at("targets").get<std::string>());
        lora.base = l.at("base").get<std::string>();
    } catch (const nlohmann::json::exception& e) {
        throw InputError(fmt::format("{}: lmforge_config's lora is damaged: {}", path, e.what()));
    }
    auto model = std::make_unique<Llama>(cfg, gemm, precision, Recompute::None, lora);
    model->load_base(lora.base + "/model.safetensors");
    return model;
}

}  // namespace

std::unique_ptr<Model> load_recorded_model(const std::string& path, backend::Gemm& gemm, Precision precision) {
    const std::string arch = read_model_arch(path);
    std::unique_ptr<Model> model;
    if (is_bert_family(arch)) {
        model = std::make_unique<Bert>(read_bert_config(path), gemm, precision);
    } else if (arch == "llama") {
        model = make_recorded_llama(path, gemm, precision);
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
