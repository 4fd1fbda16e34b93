#include "model/param_layout.h"

#include <fmt/format.h>

#include <functional>
#include <numeric>

#include "core/aligned_buffer.h"
#include "core/error.h"

namespace lmforge {

void ParamLayout::add(std::string name, std::vector<int64_t> shape, int64_t reserved) {
    ParamSpec spec;
    spec.numel = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
    spec.reserved = reserved > 0 ? reserved : spec.numel;
    spec.decay = shape.size() >= 2;
    spec.offset = total_;
    spec.name = std::move(name);
    spec.shape = std::move(shape);
    total_ = round_up(spec.offset + spec.reserved, kAlignment / sizeof(float));
    specs_.push_back(std::move(spec));
}

int64_t ParamLayout::count() const {
    int64_t n = 0;
    for (const auto& s : specs_) n += s.numel;
    return n;
}

const ParamSpec& ParamLayout::find(std::string_view name) const {
    for (const auto& s : specs_) {
        if (s.name == name) return s;
    }
    throw Error(fmt::format("no parameter named '{}'", name));
}

}  // namespace lmforge
