// What reading and writing Hugging Face model directories (hf_gpt2, hf_bert) share: config.json
// parsing with errors that name the file, tensors widened from F16/BF16 to float, and the
// label maps of a classification config.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <nlohmann/json.hpp>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "io/safetensors.h"
#include "model/model.h"
#include "model/param_layout.h"

namespace lmforge {

// DIR/config.json parsed; InputError naming the file if it is missing or not JSON.
nlohmann::json read_hf_config_json(const std::string& path);
// DIR/config.json's model_type ("gpt2", "llama", "bert", ...); "" where it has none.
std::string hf_model_type(const std::string& dir);

[[noreturn]] void throw_hf_config_type_error(const std::string& path, const nlohmann::json::exception& e);
[[noreturn]] void throw_hf_config_field_error(const std::string& path, const char* key, const char* expected,
                                              const nlohmann::json& value);

// J[KEY] as T (a string, an integer, a float or a boolean), or FALLBACK where the key is
// absent or null (transformers' None); a value of another JSON type is an InputError naming
// PATH, KEY and both types.
template <class T>
T hf_config_field(const nlohmann::json& j, const char* key, T fallback, const std::string& path) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if constexpr (std::is_same_v<T, bool>) {
        if (!it->is_boolean()) throw_hf_config_field_error(path, key, "a boolean", *it);
    } else if constexpr (std::is_integral_v<T>) {
        if (!it->is_number_integer()) throw_hf_config_field_error(path, key, "an integer", *it);
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!it->is_number()) throw_hf_config_field_error(path, key, "a number", *it);
    } else {
        static_assert(std::is_same_v<T, std::string>);
        if (!it->is_string()) throw_hf_config_field_error(path, key, "a string", *it);
    }
    return it->get<T>();
}

// READ(json) on PATH's config.json. READ takes its fields through hf_config_field, which names
// a field of the wrong type; a JSON type error that escapes it still becomes an InputError
// naming the file, not an internal error.
template <class Read>
auto read_hf_config(const std::string& path, Read&& read) {
    const nlohmann::json j = read_hf_config_json(path);
    try {
        return read(j);
    } catch (const nlohmann::json::exception& e) {
        throw_hf_config_type_error(path, e);
    }
}

// The weights of a Hugging Face directory: DIR/model.safetensors, or the shards that
// save_pretrained writes past its max_shard_size, listed by model.safetensors.index.json's
// weight_map (every shard it names is opened and checked; a tensor must lie in the shard the
// map says). InputError naming the file for a missing or malformed index or shard.
class HfWeights {
public:
    explicit HfWeights(const std::string& dir);
    bool contains(const std::string& name) const { return shard_of_.count(name) != 0; }
    // The file that holds `name`; InputError naming the directory if none does.
    const SafetensorsReader& file_of(const std::string& name) const;
    const std::string& where() const { return where_; }  // for messages: the file or the index

private:
    std::string where_;
    std::vector<std::unique_ptr<SafetensorsReader>> shards_;
    std::map<std::string, size_t> shard_of_;
};

// Tensor `name` of the weights into params at spec's offset as float (from F32, F16 or BF16),
// its padding rows zeroed. InputError naming the file and tensor if it is missing or misshapen.
void read_hf_tensor(const HfWeights& weights, const std::string& name, const ParamSpec& spec, float* params);

// Whether the weights hold `name` (a tied copy that some savers write) and, if so, InputError
// unless it equals the parameter `spec` already read into params.
void check_tied_copy(const HfWeights& weights, const std::string& name, const ParamSpec& spec, const float* params);

// The class config.json J names first in "architectures" (SUPPORTED[0] where it names none);
// InputError naming PATH and listing SUPPORTED for any other.
std::string hf_architecture(const nlohmann::json& j, const std::string& path, const std::vector<std::string>& supported);

// num_labels as transformers writes it: the size of id2label, else num_labels, else 2; an
// InputError for a problem_type other than single-label classification.
int64_t hf_num_labels(const nlohmann::json& config, const std::string& path);
// A classifier's class names from DIR/config.json's id2label, by index ({"0": "ham", ...});
// none where it has no id2label or its keys are not 0..n-1.
std::vector<std::string> hf_label_names(const std::string& dir);
// Adds a parameter tensor of `numel` floats at data to w as DTYPE: F32 as a view (data must
// outlive the write), F16 or BF16 rounded to nearest even into a copy.
void add_hf_weight(SafetensorsWriter& w, const std::string& name, const std::vector<int64_t>& shape,
                   const float* data, int64_t numel, Dtype dtype);
// Writes DIR (created or replaced atomically) as save_pretrained does: config.json with
// torch_dtype set for DTYPE, the model's parameters as model.safetensors in DTYPE under
// hf_name(name) (null: their own names), and `files` (name, content) beside them.
void save_hf_directory(const std::string& dir, nlohmann::json config, const Model& model, Dtype dtype,
                       const std::function<std::string(const std::string&)>& hf_name = nullptr,
                       const std::vector<std::pair<std::string, std::string>>& files = {});
// transformers' torch_dtype for DTYPE (F32, F16, BF16): "float32", "float16", "bfloat16".
const char* hf_torch_dtype(Dtype dtype);
// "f32", "f16" or "bf16" as a Dtype (export --dtype); InputError otherwise.
Dtype parse_weight_dtype(const std::string& name);

// id2label / label2id added to config: the class names (a classify run's labels.json) where
// there is one per label, else LABEL_0 .. LABEL_{n-1}.
void add_hf_label_maps(nlohmann::json& config, int64_t num_labels, const std::vector<std::string>& names = {});

}  // namespace lmforge
