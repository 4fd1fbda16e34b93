#include "train/roofline.h"

#include <algorithm>

namespace lmforge {

namespace {

RooflineRow row(const std::string& family, double ms, const std::vector<FamilyCost>& costs,
                const MachineLimits& limits) {
    RooflineRow r;
    r.family = family;
    r.reached_ms = ms;
    const auto it = std::find_if(costs.begin(), costs.end(), [&](const FamilyCost& c) { return c.family == family; });
    if (it == costs.end()) return r;
    r.cost = *it;
    const double gflops = it->bf16_math ? limits.bf16_gflops : limits.fp32_gflops;
    r.compute_ms = it->flops / (gflops * 1e9) * 1e3;
    for (const double bytes : it->passes) r.bandwidth_ms += backend::least_memory_seconds(bytes, limits.memory) * 1e3;
    return r;
}

}  // namespace

std::vector<RooflineRow> roofline(const std::vector<std::pair<std::string, double>>& profile,
                                  const std::vector<FamilyCost>& costs, const MachineLimits& limits) {
    std::vector<RooflineRow> rows;
    for (const auto& [family, ms] : profile) rows.push_back(row(family, ms, costs, limits));
    return rows;
}

}  // namespace lmforge
