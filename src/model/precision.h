// The precision GEMMs run in: fp32, or mixed — bfloat16 inputs with fp32 accumulation, fp32
// master weights, optimizer and everything outside the GEMMs (layernorm, softmax, loss,
// reductions). bf16 needs no loss scaling: it has fp32's exponent range.
#pragma once

#include <string>

namespace lmforge {

enum class Precision { Fp32, Bf16 };

// This machine's peak GFLOP/s for GEMMs in precision p on the current threads, measured
// (backend/peak.h): fp32 FMAs; for bf16, AMX tile products where oneDNN's GEMMs run on tiles,
// else bf16 dot products where the CPU has AVX512_BF16 (bf16 GEMMs elsewhere widen to fp32 and
// run at the fp32 peak). The denominator of the model FLOP utilisation unless one is given.
double peak_gflops(Precision p);

// What that peak is a rate of: "tdpbf16ps (AMX-BF16)", "vdpbf16ps (AVX512_BF16)", "fp32 FMA
// (AVX-512)", ...
const char* peak_unit(Precision p);

// The same measured again, keeping the higher figure (backend::remeasured_peak_gflops): for when
// a model seems to run faster than the first measurement allows.
double remeasured_peak_gflops(Precision p);

// Whether this CPU computes in bf16 natively (AVX512_BF16; AMX-BF16 CPUs have it too).
bool cpu_has_bf16();

// "fp32", "bf16", or "auto" (bf16 where the CPU has it, else fp32). `why` receives the
// reason, for the log. InputError for other names.
Precision resolve_precision(const std::string& name, std::string& why);

const char* precision_name(Precision p);

// train.precision = "fp16" runs the fp32 model on GEMMs whose inputs are rounded to fp16
// (model/fp16_gemm.h), converted with F16C: InputError where the kernel level has no F16C (the
// baseline, x86-64-v2).
void check_fp16_supported();

}  // namespace lmforge
