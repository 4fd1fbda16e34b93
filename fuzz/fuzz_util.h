// What the harnesses share. A reader that refuses bad input with lmforge::Error (InputError
// is one) has done its job; any other exception, a crash, a sanitizer report or a failed
// check() is a finding, and libFuzzer stops with the input that caused it.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "core/error.h"

namespace lmforge::fuzz {

// Runs f(); returns false if it threw lmforge::Error, true if it returned. Another exception
// (nlohmann's, std::out_of_range, ...) escaping a reader is a finding: it names its type and
// aborts, which libFuzzer reports as a crash. LMFORGE_FUZZ_SHOW_ERRORS=1 prints the refusals,
// to see which seeds a reader accepts.
template <class F>
bool accepts(F&& f) {
    try {
        f();
        return true;
    } catch (const Error& e) {
        static const bool show = std::getenv("LMFORGE_FUZZ_SHOW_ERRORS") != nullptr;
        if (show) std::fprintf(stderr, "refused: %s\n", e.one_line().c_str());
        return false;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "FINDING: %s escaped: %s\n", typeid(e).name(), e.what());
        std::abort();
    }
}

// A failed property (a round trip that does not give back its input, say) is a finding.
inline void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "FINDING: %s\n", what);
        std::abort();
    }
}

// A directory of this process's own under $TMPDIR, for readers that take paths; removed at
// exit (after a crash libFuzzer skips that: scripts/fuzz.sh gives each run a TMPDIR of its own).
inline const std::filesystem::path& scratch_dir() {
    static const std::filesystem::path dir = [] {
        const auto p = std::filesystem::temp_directory_path() / ("lmforge_fuzz_" + std::to_string(::getpid()));
        std::filesystem::create_directories(p);
        return p;
    }();
    // Registered once dir is made, so it runs before dir is destroyed.
    static const bool remove_at_exit = [] {
        return std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(scratch_dir(), ec);
        }) == 0;
    }();
    (void)remove_at_exit;
    return dir;
}

// Writes bytes to scratch_dir()/name, replacing what an earlier input left there.
inline std::string write_scratch(const std::string& name, std::string_view bytes) {
    const std::filesystem::path p = scratch_dir() / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p.string();
}

inline void remove_scratch(const std::string& name) { std::filesystem::remove_all(scratch_dir() / name); }

// Inputs that stand for several files hold them one after another, separated by this line;
// the seeds in fuzz/corpus/ are written so.
inline constexpr std::string_view kPartSeparator = "\n=====\n";

// The first n parts of input (fewer if it has fewer; the last takes the rest).
inline std::vector<std::string_view> split_parts(std::string_view input, size_t n) {
    std::vector<std::string_view> parts;
    while (parts.size() + 1 < n) {
        const size_t at = input.find(kPartSeparator);
        if (at == std::string_view::npos) break;
        parts.push_back(input.substr(0, at));
        input.remove_prefix(at + kPartSeparator.size());
    }
    parts.push_back(input);
    return parts;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

}  // namespace lmforge::fuzz
