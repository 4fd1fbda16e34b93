#include "backend/isa.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "core/error.h"

namespace lmforge::backend {

namespace {

bool cpu_runs(Isa isa) {
#if defined(__x86_64__)
    // The levels are the x86-64 psABI's micro-architecture levels, as GCC's -march names them.
    switch (isa) {
        case Isa::Avx512:
            return __builtin_cpu_supports("x86-64-v4");
        case Isa::Avx2:
            return __builtin_cpu_supports("x86-64-v3");
        case Isa::Baseline:
            return __builtin_cpu_supports("x86-64-v2");
        default:
            return true;  // native: the machine the build ran on
    }
#else
    return isa == Isa::Native;
#endif
}

Isa parse(const std::string& name) {
    for (const Isa isa : built_isas()) {
        if (name == isa_name(isa)) return isa;
    }
    std::string known;
    for (const Isa isa : built_isas()) known += std::string(known.empty() ? "" : ", ") + isa_name(isa);
    throw InputError(fmt::format("LMFORGE_ISA = {}: not a level of this build ({})", name, known),
                     built_isas().size() == 1 ? "a native build (-DLMFORGE_NATIVE=ON) has one level: unset LMFORGE_ISA"
                                              : "unset LMFORGE_ISA to take the best the CPU runs");
}

void require_runnable(Isa isa) {
    if (cpu_runs(isa)) return;
    throw InputError(fmt::format("LMFORGE_ISA = {}: this CPU cannot run it (its best is {})", isa_name(isa),
                                 isa_name(runnable_isas().back())),
                     "name a lower level, or unset LMFORGE_ISA");
}

Isa initial_isa() {
    if (const char* env = std::getenv("LMFORGE_ISA"); env != nullptr && *env != '\0') {
        const Isa isa = parse(env);
        require_runnable(isa);
        return isa;
    }
    return runnable_isas().back();
}

std::atomic<int>& chosen() {
    static std::atomic<int> isa{-1};
    return isa;
}

}  // namespace

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::Baseline:
            return "baseline";
        case Isa::Avx2:
            return "avx2";
        case Isa::Avx512:
            return "avx512";
        case Isa::Native:
            return "native";
    }
    return "?";
}

std::vector<Isa> built_isas() {
#if defined(LMFORGE_KERNELS_PORTABLE)
    return {Isa::Baseline, Isa::Avx2, Isa::Avx512};
#else
    return {Isa::Native};
#endif
}

std::vector<Isa> runnable_isas() {
    std::vector<Isa> out;
    for (const Isa isa : built_isas()) {
        if (cpu_runs(isa)) out.push_back(isa);
    }
    return out;
}

Isa active_isa() {
    int isa = chosen().load(std::memory_order_relaxed);
    if (isa < 0) {
        isa = static_cast<int>(initial_isa());
        chosen().store(isa, std::memory_order_relaxed);
    }
    return static_cast<Isa>(isa);
}

void set_active_isa(Isa isa) {
    if (std::find(built_isas().begin(), built_isas().end(), isa) == built_isas().end()) parse(isa_name(isa));
    require_runnable(isa);
    chosen().store(static_cast<int>(isa), std::memory_order_relaxed);
}

std::string describe_isa() {
    const Isa isa = active_isa(), best = runnable_isas().back();
    if (isa == Isa::Native) return "native (built for the build machine's CPU)";
    if (isa == best) return fmt::format("{} (the best this CPU runs)", isa_name(isa));
    return fmt::format("{} (LMFORGE_ISA; this CPU runs {})", isa_name(isa), isa_name(best));
}

}  // namespace lmforge::backend
