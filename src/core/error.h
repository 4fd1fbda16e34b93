// Errors that reach the user: what failed (file, field, value, what was expected) and a HINT.
// InputError is the user's to fix (bad config, flag or file; the CLI exits 2); Error is
// everything else that stops a run (I/O failure, full disk; exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace lmforge {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& what, std::string hint = {})
        : std::runtime_error(what), hint_(std::move(hint)) {}

    const std::string& hint() const { return hint_; }

    // The single line the CLI prints: "<what> (HINT: <hint>)".
    std::string one_line() const {
        return hint_.empty() ? std::string(what()) : std::string(what()) + " (HINT: " + hint_ + ")";
    }

private:
    std::string hint_;
};

class InputError : public Error {
public:
    using Error::Error;
};

}  // namespace lmforge
