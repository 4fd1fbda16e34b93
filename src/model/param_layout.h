// The table of a model's parameters: Hugging Face name, shape, and offset into one flat
// buffer. Parameters, gradients and Adam moments share this layout, so zeroing, AdamW,
// clipping, all-reduce and checkpoint I/O are loops over flat memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lmforge {

struct ParamSpec {
    std::string name;            // Hugging Face name, e.g. "h.0.attn.c_attn.weight"
    std::vector<int64_t> shape;  // Hugging Face shape
    int64_t numel = 0;           // product of shape: what counts as parameters
    int64_t reserved = 0;        // floats reserved, >= numel (wte's rows padded to Vp)
    int64_t offset = 0;          // into the flat buffer, in floats; 64-byte aligned
    bool decay = false;          // AdamW weight decay: on matrices (>= 2-D) only
};

class ParamLayout {
public:
    // Appends a parameter; `reserved` 0 means numel.
    void add(std::string name, std::vector<int64_t> shape, int64_t reserved = 0);

    const std::vector<ParamSpec>& specs() const { return specs_; }
    int64_t total() const { return total_; }  // floats in the flat buffer
    int64_t count() const;                    // parameters, without padding
    const ParamSpec& find(std::string_view name) const;  // throws Error if absent

private:
    std::vector<ParamSpec> specs_;
    int64_t total_ = 0;
};

}  // namespace lmforge
