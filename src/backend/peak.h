// The machine's peak arithmetic rate, measured rather than assumed: the denominator of the
// model FLOP utilisation (MFU). A table of nominal figures would be wrong on the next CPU.
#pragma once

namespace lmforge::backend {

enum class PeakKind {
    Fp32Fma,    // fp32 fused multiply-adds at the widest vector width the CPU has
    Bf16Dot,    // bf16 dot products into fp32 (AVX512_BF16); the fp32 figure where absent
    Bf16Tile,   // bf16 products on matrix tiles (AMX-BF16); Bf16Dot's figure where absent
};

// GFLOP/s of back-to-back independent multiply-adds: the sum over the OpenMP threads of each
// one's best of forty ~1 ms runs, or the best on record for this CPU if higher
// (backend/best_figures.h). Measured once per kind and thread count, then remembered.
double measured_peak_gflops(PeakKind kind);

// The instruction whose rate measured_peak_gflops(kind) is on this CPU: "tdpbf16ps (AMX-BF16)",
// "vdpbf16ps (AVX512_BF16)",
// "fp32 FMA (AVX-512)", "fp32 FMA (AVX2)" or "fp32 scalar": the unit the MFU is a fraction of.
const char* peak_unit(PeakKind kind);

// Measures again and remembers the higher figure. A measurement still reads low when
// something else holds the cores for all of a thread's runs (the host of a virtual machine,
// for a while): a model then seems to run above the peak.
double remeasured_peak_gflops(PeakKind kind);

}  // namespace lmforge::backend
