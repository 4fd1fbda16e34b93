#include "train/memory_report.h"

#include <fmt/format.h>

namespace lmforge {

namespace {

constexpr double kMiB = 1048576.0;

}  // namespace

MemoryParts memory_parts(const Model& model, const DataParallel& dp) {
    return {static_cast<double>(model.frozen_bytes()) / kMiB, static_cast<double>(model.weight_bytes()) / kMiB,
            static_cast<double>(model.gradient_bytes()) / kMiB, static_cast<double>(dp.moment_bytes()) / kMiB,
            static_cast<double>(model.activation_bytes()) / kMiB, model.grads_in_bf16()};
}

std::string describe_memory(const MemoryParts& m, Precision precision) {
    std::string s;
    const auto part = [&](double mib, const std::string& name) {
        if (mib <= 0) return;
        s += fmt::format("{}{} {:.{}f} MiB", s.empty() ? "" : " + ", name, mib, mib < 10 ? 1 : 0);
    };
    part(m.frozen_mib, precision == Precision::Bf16 ? "frozen base (bf16)" : "frozen base (fp32)");
    part(m.weights_mib, precision == Precision::Bf16 ? "trainable weights (fp32 + bf16 copy)" : "trainable weights");
    part(m.gradients_mib, m.bf16_gradients ? "gradients (bf16 + fp32 window)" : "gradients");
    part(m.moments_mib, "AdamW moments");
    part(m.activations_mib, "activations");
    return s + fmt::format(" = {:.0f} MiB", m.total_mib());
}

}  // namespace lmforge
