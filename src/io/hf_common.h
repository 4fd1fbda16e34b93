// What reading and writing Hugging Face model directories (hf_gpt2, hf_bert) share: config.json
// parsing with errors that name the file, tensors widened from F16/BF16 to float, and the
// label maps of a classification config.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "io/safetensors.h"
#include "model/param_layout.h"

namespace lmforge {

// DIR/config.json parsed; InputError naming the file if it is missing or not JSON.
nlohmann::json read_hf_config_json(const std::string& path);

[[noreturn]] void throw_hf_config_type_error(const std::string& path, const nlohmann::json::exception& e);

// READ(json) on PATH's config.json: a field of another JSON type than READ takes (a string
// where a number belongs) becomes an InputError naming the file, not an internal error.
template <class Read>
auto read_hf_config(const std::string& path, Read&& read) {
    const nlohmann::json j = read_hf_config_json(path);
    try {
        return read(j);
    } catch (const nlohmann::json::exception& e) {
        throw_hf_config_type_error(path, e);
    }
}

// Tensor `name` of `file` into params at spec's offset as float (from F32, F16 or BF16), its
// padding rows zeroed. InputError naming the file and tensor if it is missing or misshapen.
void read_hf_tensor(const SafetensorsReader& file, const std::string& name, const ParamSpec& spec, float* params);

// Whether `file` holds `name` (a tied copy that some savers write) and, if so, InputError
// unless it equals the parameter `spec` already read into params.
void check_tied_copy(const SafetensorsReader& file, const std::string& name, const ParamSpec& spec,
                     const float* params);

// num_labels as transformers writes it: the size of id2label, else num_labels, else 2.
int64_t hf_num_labels(const nlohmann::json& config);
// id2label / label2id entries LABEL_0 .. LABEL_{n-1}, added to config.
void add_hf_label_maps(nlohmann::json& config, int64_t num_labels);

}  // namespace lmforge
