// Train/validation/test splits of n examples by a seeded permutation: test takes the first
// share, validation the next, train the rest. Shared by labelled and instruction data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lmforge {

enum class Split { Train, Val, Test };

struct SplitAssignment {
    size_t index;  // the example's
    Split split;
};

// Every example's split, in the permuted order (the order each split keeps its examples in).
// InputError unless the fractions are >= 0 and sum below 1.
std::vector<SplitAssignment> assign_splits(size_t n, double val_fraction, double test_fraction, uint64_t seed);

}  // namespace lmforge
