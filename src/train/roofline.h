// Each kernel family's measured time against the least time the machine allows it: its FLOPs
// at the peak of the arithmetic it runs on (the compute limit), and its bytes at the speed of
// the memory levels that could serve them (the bandwidth limit: each kernel pass's bytes, as
// many as each cache level holds from that level, the rest from memory; a pass's data may
// still be in cache from the kernel that wrote them). The larger limit is the family's bound;
// the bound over the time reached is the fraction of the machine the family uses, at most 1
// if its FLOPs and bytes are counted right and the limits measured in the same conditions.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/bandwidth.h"
#include "train/step_costs.h"

namespace lmforge {

// What the limits divide by: GFLOP/s of a mixed-precision run's GEMMs (AMX tile products where
// they run on tiles, else bf16 dot products; attention's bf16 math is held to it too) and of
// fp32 arithmetic (everything else), and the memory levels, fastest first, memory last
// (backend::measured_memory_levels()).
struct MachineLimits {
    double bf16_gflops = 0, fp32_gflops = 0;
    std::vector<backend::MemoryLevel> memory;
};

struct RooflineRow {
    std::string family;
    double reached_ms = 0;  // measured, per step
    // Per step; none for a family whose cost is not modelled.
    std::optional<FamilyCost> cost;
    double compute_ms = 0, bandwidth_ms = 0;

    double bound_ms() const { return compute_ms > bandwidth_ms ? compute_ms : bandwidth_ms; }
    // bound / reached: 1 at the limit. 0 where nothing is modelled or nothing was timed.
    double fraction() const { return reached_ms > 0 ? bound_ms() / reached_ms : 0; }
};

// A row for each family of the profile ((family, mean ms per step), in its order), with its
// cost from `costs` where there is one.
std::vector<RooflineRow> roofline(const std::vector<std::pair<std::string, double>>& profile,
                                  const std::vector<FamilyCost>& costs, const MachineLimits& limits);

}  // namespace lmforge
