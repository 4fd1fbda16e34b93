// Which build of lmforge's own kernels runs. A portable build compiles src/kernels/ once per
// instruction-set level: baseline (x86-64-v2), avx2 (x86-64-v3: AVX2 and FMA) and avx512
// (x86-64-v4: AVX-512 F, BW, DQ, VL). Each process runs the best level its CPU has (cpuid),
// or a lower one that the environment variable LMFORGE_ISA names, and caps oneDNN's GEMMs to
// it too. A native build (-DLMFORGE_NATIVE=ON, or another architecture than x86-64) compiles
// them once, for the build machine, and knows only that level.
#pragma once

#include <string>
#include <vector>

namespace lmforge::backend {

enum class Isa { Baseline, Avx2, Avx512, Native };

const char* isa_name(Isa isa);  // "baseline", "avx2", "avx512", "native"

// The levels this build has kernels for, lowest first ({Native} in a native build).
std::vector<Isa> built_isas();
// Of those, the ones this CPU runs, lowest first.
std::vector<Isa> runnable_isas();

// The level the kernels run at: the best runnable one, or LMFORGE_ISA's (InputError for a
// name that is not a level of this build, or one this CPU cannot run). Decided once.
Isa active_isa();
// Runs the kernels at `isa` from now on (tests of every level); InputError as for LMFORGE_ISA.
void set_active_isa(Isa isa);

// "avx512 (the best this CPU runs)", "avx2 (LMFORGE_ISA; this CPU runs avx512)": for logs.
std::string describe_isa();

}  // namespace lmforge::backend
