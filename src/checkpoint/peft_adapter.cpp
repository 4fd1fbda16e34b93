#include "checkpoint/peft_adapter.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "io/safetensors.h"

namespace lmforge {

namespace {

nlohmann::json adapter_config(const Llama& model) {
    const LoraOptions& l = model.lora();
    std::vector<std::string> targets;
    std::stringstream in(l.targets_list());
    for (std::string t; std::getline(in, t, ',');) targets.push_back(t);
    const bool classifier = model.num_labels() > 0;
    return {{"peft_type", "LORA"},
            {"task_type", classifier ? "SEQ_CLS" : "CAUSAL_LM"},
            {"base_model_name_or_path", l.base},
            {"r", l.rank},
            {"lora_alpha", l.alpha},
            {"lora_dropout", l.dropout},
            {"target_modules", targets},
            {"modules_to_save", classifier ? nlohmann::json::array({"score"}) : nlohmann::json(nullptr)},
            {"bias", "none"},
            {"fan_in_fan_out", false},
            {"use_rslora", false},
            {"use_dora", false},
            {"inference_mode", true}};
}

}  // namespace

void save_peft_adapter(const Llama& model, const std::string& dir) {
    if (!model.lora().enabled()) throw Error("save_peft_adapter: the model has no LoRA adapters");
    SafetensorsWriter w;
    for (const ParamSpec& s : model.layout().specs()) {
        w.add_view(s.name, Dtype::F32, s.shape, model.params().data() + s.offset);
    }
    w.add_metadata("format", "pt");
    const std::string config = adapter_config(model).dump(2) + "\n";
    publish_directory(dir, [&](const std::string& tmp) {
        w.write(tmp + "/adapter_model.safetensors");
        write_text_atomic(tmp + "/adapter_config.json", config);
    });
}

}  // namespace lmforge
