// Checks every model configuration makes of the numbers it is given (a training config, a
// checkpoint's lmforge_config, a Hugging Face config.json): InputErrors naming the field.
#pragma once

#include <cstdint>

namespace lmforge {

void require_positive(const char* field, int64_t value);

// The most parameters a model may hold: 2^36 (275 GB in fp32, far past any machine lmforge
// trains on). A larger count is a damaged or mistaken configuration, refused by name before
// anything is allocated for it.
inline constexpr double kMaxParameters = 68719476736.0;
// `parameters` counted in double, so that no product of the fields overflows first.
void require_parameters_within_bounds(double parameters);

}  // namespace lmforge
