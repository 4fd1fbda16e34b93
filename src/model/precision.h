// The precision GEMMs run in: fp32, or mixed — bfloat16 inputs with fp32 accumulation, fp32
// master weights, optimizer and everything outside the GEMMs (layernorm, softmax, loss,
// reductions). bf16 needs no loss scaling: it has fp32's exponent range.
#pragma once

#include <string>

namespace lmforge {

enum class Precision { Fp32, Bf16 };

// The machine's measured 2-thread peaks (README): 224 GFLOP/s fp32 FMA, 451 bf16 dot products
// (AVX512_BF16) — the denominators of the model FLOP utilisation unless one is given.
double default_peak_gflops(Precision p);

// Whether this CPU computes in bf16 natively (AVX512_BF16; AMX-BF16 CPUs have it too).
bool cpu_has_bf16();

// "fp32", "bf16", or "auto" (bf16 where the CPU has it, else fp32). `why` receives the
// reason, for the log. InputError for other names.
Precision resolve_precision(const std::string& name, std::string& why);

const char* precision_name(Precision p);

}  // namespace lmforge
