#include "model/config_checks.h"

#include <fmt/format.h>

#include "core/error.h"

namespace lmforge {

void require_positive(const char* field, int64_t value) {
    if (value <= 0) {
        throw InputError(fmt::format("{} = {} must be a positive integer", field, value),
                         fmt::format("set {} to 1 or more", field));
    }
}

void require_parameters_within_bounds(double parameters) {
    if (parameters > kMaxParameters) {
        throw InputError(fmt::format("the model would hold {:.3g} parameters, more than the {:.3g} lmforge allows",
                                     parameters, kMaxParameters),
                         "check the configuration's sizes (n_layer, n_embd or hidden, vocab_size, context)");
    }
}

}  // namespace lmforge
