#include "data/splits.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace lmforge {

std::vector<SplitAssignment> assign_splits(size_t n, double val_fraction, double test_fraction, uint64_t seed) {
    if (!(val_fraction >= 0 && test_fraction >= 0 && val_fraction + test_fraction < 1)) {
        throw InputError(fmt::format("validation {} and test {} fractions must be >= 0 and sum below 1", val_fraction,
                                     test_fraction));
    }
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    Rng rng(seed);
    for (size_t i = n; i > 1; i--) std::swap(order[i - 1], order[rng.below(i)]);
    const auto n_test = static_cast<size_t>(std::llround(test_fraction * static_cast<double>(n)));
    const auto n_val = static_cast<size_t>(std::llround(val_fraction * static_cast<double>(n)));
    std::vector<SplitAssignment> out(n);
    for (size_t k = 0; k < n; k++) {
        out[k] = {order[k], k < n_test ? Split::Test : k < n_test + n_val ? Split::Val : Split::Train};
    }
    return out;
}

}  // namespace lmforge
