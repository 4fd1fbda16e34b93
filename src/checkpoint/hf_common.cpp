#include "checkpoint/hf_common.h"

#include <fmt/format.h>

#include <filesystem>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "core/bf16.h"
#include "core/fp16.h"
#include "io/json_fields.h"

namespace lmforge {

using json = nlohmann::json;

void save_hf_directory(const std::string& dir, nlohmann::json config, const Model& model, Dtype dtype,
                       const std::function<std::string(const std::string&)>& hf_name,
                       const std::vector<std::pair<std::string, std::string>>& files) {
    config["torch_dtype"] = hf_torch_dtype(dtype);
    SafetensorsWriter w;
    for (const ParamSpec& s : model.layout().specs()) {
        // In F32 a view, not a copy: the model outlives the write.
        add_hf_weight(w, hf_name ? hf_name(s.name) : s.name, s.shape, model.params().data() + s.offset, s.numel,
                      dtype);
    }
    w.add_metadata("format", "pt");
    publish_directory(dir, [&](const std::string& tmp) {
        write_text_atomic(tmp + "/config.json", config.dump(2) + "\n");
        w.write(tmp + "/model.safetensors");
        for (const auto& [name, content] : files) write_text_atomic(tmp + "/" + name, content);
    });
}

void add_hf_weight(SafetensorsWriter& w, const std::string& name, const std::vector<int64_t>& shape,
                   const float* data, int64_t numel, Dtype dtype) {
    if (dtype == Dtype::F32) return w.add_view(name, dtype, shape, data);
    std::vector<uint16_t> narrow(static_cast<size_t>(numel));
    for (int64_t i = 0; i < numel; i++) narrow[i] = dtype == Dtype::F16 ? to_f16(data[i]) : to_bf16(data[i]);
    w.add(name, dtype, shape, narrow.data());
}

std::string hf_architecture(const json& j, const std::string& path, const std::vector<std::string>& supported) {
    if (!j.contains("architectures") || !j["architectures"].is_array() || j["architectures"].empty()) {
        return supported.front();
    }
    const json& first = j["architectures"][0];
    const std::string arch = first.is_string() ? first.get<std::string>() : j["architectures"].dump();
    if (std::find(supported.begin(), supported.end(), arch) != supported.end()) return arch;
    std::string names = supported.front();
    for (size_t i = 1; i < supported.size(); i++) names += (i + 1 == supported.size() ? " and " : ", ") + supported[i];
    throw InputError(fmt::format("{}: architectures = {} is not supported", path, arch), "lmforge imports " + names);
}

const char* hf_torch_dtype(Dtype dtype) {
    return dtype == Dtype::F16 ? "float16" : dtype == Dtype::BF16 ? "bfloat16" : "float32";
}

Dtype parse_weight_dtype(const std::string& name) {
    if (name == "f32") return Dtype::F32;
    if (name == "f16") return Dtype::F16;
    if (name == "bf16") return Dtype::BF16;
    throw InputError(fmt::format("--dtype {}: not f32, f16 or bf16", name));
}

json read_hf_config_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        throw InputError(fmt::format("{}: cannot open", path),
                         "a Hugging Face model directory holds config.json and model.safetensors (save_pretrained)");
    }
    try {
        return json::parse(in, json_depth_limit(path));
    } catch (const json::exception& e) {
        throw InputError(fmt::format("{}: not JSON: {}", path, e.what()));
    }
}

std::string hf_model_type(const std::string& dir) {
    const std::string path = dir + "/config.json";
    return read_hf_config(path, [&](const json& j) { return hf_config_field(j, "model_type", std::string(), path); });
}

void throw_hf_config_type_error(const std::string& path, const nlohmann::json::exception& e) {
    // nlohmann's text after its "[json.exception...] " tag: "type must be string, but is number".
    const std::string what = e.what();
    const size_t tag = what.find("] ");
    throw InputError(fmt::format("{}: a field has the wrong type: {}", path,
                                 tag == std::string::npos ? what : what.substr(tag + 2)),
                     "compare the file with what transformers' save_pretrained writes");
}

void throw_hf_config_field_error(const std::string& path, const char* key, const char* expected, const json& value) {
    throw InputError(fmt::format("{}: {} = {} must be {}, not {}", path, key, value.dump(), expected, value.type_name()),
                     "compare the file with what transformers' save_pretrained writes");
}

HfWeights::HfWeights(const std::string& dir) {
    const std::string single = dir + "/model.safetensors", index = single + ".index.json";
    if (std::filesystem::exists(single) || !std::filesystem::exists(index)) {
        where_ = single;
        shards_.push_back(std::make_unique<SafetensorsReader>(single));
        for (const std::string& name : shards_[0]->names()) shard_of_[name] = 0;
        return;
    }
    where_ = index;
    const json map = read_hf_config_json(index).value("weight_map", json());
    if (!map.is_object() || map.empty()) throw InputError(fmt::format("{}: no weight_map of tensors to files", index));
    std::map<std::string, size_t> opened;
    for (const auto& [name, file] : map.items()) {
        const std::string shard = file.is_string() ? file.get<std::string>() : "";
        if (shard.empty() || shard.find('/') != std::string::npos) {
            throw InputError(fmt::format("{}: tensor '{}' maps to {}, not a file beside it", index, name, file.dump()));
        }
        auto [at, fresh] = opened.emplace(shard, shards_.size());
        if (fresh) shards_.push_back(std::make_unique<SafetensorsReader>(dir + "/" + shard));
        if (!shards_[at->second]->contains(name)) {
            throw InputError(fmt::format("{}: names {} for tensor '{}', which that file does not hold", index, shard,
                                         name));
        }
        shard_of_[name] = at->second;
    }
}

const SafetensorsReader& HfWeights::file_of(const std::string& name) const {
    const auto it = shard_of_.find(name);
    if (it == shard_of_.end()) {
        throw InputError(fmt::format("{}: no tensor '{}'", where_, name),
                         "the file is incomplete or of another model than its config.json");
    }
    return *shards_[it->second];
}

void read_hf_tensor(const HfWeights& weights, const std::string& name, const ParamSpec& spec, float* params) {
    const SafetensorsReader& file = weights.file_of(name);
    if (file.info(name).shape != spec.shape) {
        throw InputError(fmt::format("{}: tensor '{}' has shape [{}], config.json implies [{}]", file.path(), name,
                                     fmt::join(file.info(name).shape, ", "), fmt::join(spec.shape, ", ")));
    }
    file.read_float(name, std::span<float>(params + spec.offset, static_cast<size_t>(spec.numel)));
    std::fill(params + spec.offset + spec.numel, params + spec.offset + spec.reserved, 0.0f);  // padding rows
}

void check_tied_copy(const HfWeights& weights, const std::string& name, const ParamSpec& spec, const float* params) {
    if (!weights.contains(name)) return;
    const SafetensorsReader& file = weights.file_of(name);
    if (file.info(name).shape != spec.shape) {
        throw InputError(fmt::format("{}: {} has another shape than {}", file.path(), name, spec.name));
    }
    std::vector<float> copy(static_cast<size_t>(spec.numel));
    file.read_float(name, std::span<float>(copy.data(), static_cast<size_t>(spec.numel)));
    if (std::memcmp(copy.data(), params + spec.offset, copy.size() * sizeof(float)) != 0) {
        throw InputError(fmt::format("{}: {} differs from {}", file.path(), name, spec.name),
                         "lmforge ties the output layer to the token embedding");
    }
}

int64_t hf_num_labels(const json& config, const std::string& path) {
    const auto problem = hf_config_field(config, "problem_type", std::string("single_label_classification"), path);
    if (problem != "single_label_classification") {
        throw InputError(fmt::format("{}: problem_type = \"{}\" is not supported", path, problem),
                         "lmforge trains single-label classifiers (softmax cross-entropy)");
    }
    if (config.contains("id2label") && config["id2label"].is_object()) return static_cast<int64_t>(config["id2label"].size());
    return hf_config_field(config, "num_labels", int64_t{2}, path);
}

std::vector<std::string> hf_label_names(const std::string& dir) {
    const json config = read_hf_config_json(dir + "/config.json");
    if (!config.contains("id2label") || !config["id2label"].is_object()) return {};
    const json& id2label = config["id2label"];
    std::vector<std::string> names(id2label.size());
    for (size_t i = 0; i < names.size(); i++) {
        const auto it = id2label.find(std::to_string(i));
        if (it == id2label.end() || !it->is_string()) return {};
        names[i] = it->get<std::string>();
    }
    return names;
}

void add_hf_label_maps(json& config, int64_t num_labels, const std::vector<std::string>& names) {
    const bool named = static_cast<int64_t>(names.size()) == num_labels;
    json id2label = json::object(), label2id = json::object();
    for (int64_t i = 0; i < num_labels; i++) {
        const std::string name = named ? names[static_cast<size_t>(i)] : fmt::format("LABEL_{}", i);
        id2label[std::to_string(i)] = name;
        label2id[name] = i;
    }
    config["id2label"] = id2label;
    config["label2id"] = label2id;
}

}  // namespace lmforge
