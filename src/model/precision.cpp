#include "model/precision.h"

#include <fmt/format.h>

#include "backend/gemm_onednn.h"
#include "backend/isa.h"
#include "backend/peak.h"
#include "core/error.h"

namespace lmforge {

bool cpu_has_bf16() {
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx512bf16");
#else
    return false;
#endif
}

Precision resolve_precision(const std::string& name, std::string& why) {
    if (name == "fp32") {
        why = "asked for";
        return Precision::Fp32;
    }
    if (name == "bf16") {
        why = cpu_has_bf16() ? "asked for; the CPU has AVX512_BF16"
                             : "asked for, but this CPU lacks AVX512_BF16: GEMMs widen bf16 to fp32, slower than fp32";
        return Precision::Bf16;
    }
    if (name == "auto") {
        if (cpu_has_bf16()) {
            why = "auto: the CPU has AVX512_BF16";
            return Precision::Bf16;
        }
        why = "auto: the CPU lacks AVX512_BF16";
        return Precision::Fp32;
    }
    throw InputError(fmt::format("precision '{}' is not fp32, bf16 or auto", name), "train.precision = \"auto\"");
}

const char* precision_name(Precision p) { return p == Precision::Bf16 ? "bf16" : "fp32"; }

void check_fp16_supported() {
    if (backend::active_isa() == backend::Isa::Baseline) {
        throw InputError("train.precision = \"fp16\" needs F16C conversions, which the baseline kernel level "
                         "(x86-64-v2) lacks",
                         "use fp32 or bf16, or kernels of level avx2 or above (LMFORGE_ISA)");
    }
}

namespace {
// bf16 GEMMs on AMX run at the tile rate: dividing by vdpbf16ps's would read above 100%.
backend::PeakKind peak_kind(Precision p) {
    if (p != Precision::Bf16 || !cpu_has_bf16()) return backend::PeakKind::Fp32Fma;
    return backend::onednn_bf16_on_tiles() ? backend::PeakKind::Bf16Tile : backend::PeakKind::Bf16Dot;
}
}  // namespace

double peak_gflops(Precision p) { return backend::measured_peak_gflops(peak_kind(p)); }

const char* peak_unit(Precision p) { return backend::peak_unit(peak_kind(p)); }

double remeasured_peak_gflops(Precision p) { return backend::remeasured_peak_gflops(peak_kind(p)); }

}  // namespace lmforge
