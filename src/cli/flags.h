// Flag validators with messages a user can act on ("--threads: 0 is not a positive
// integer"), in place of CLI11's range checks, whose messages print the type's limits.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace lmforge::cli {

// Accepts integers >= minimum.
inline CLI::Validator integer_at_least(long long minimum) {
    const std::string what = minimum == 1   ? "a positive integer"
                             : minimum == 0 ? "a non-negative integer"
                                            : "an integer >= " + std::to_string(minimum);
    return CLI::Validator(
        [minimum, what](std::string& value) -> std::string {
            long long parsed = 0;
            size_t used = 0;
            try {
                parsed = std::stoll(value, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used == 0 || used != value.size() || parsed < minimum) {
                return "'" + value + "' is not " + what;
            }
            return {};
        },
        what);
}

// Accepts numbers > 0.
inline CLI::Validator positive_number() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            double parsed = 0;
            size_t used = 0;
            try {
                parsed = std::stod(value, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used == 0 || used != value.size() || !(parsed > 0)) {
                return "'" + value + "' is not a positive number";
            }
            return {};
        },
        "a positive number");
}

}  // namespace lmforge::cli
