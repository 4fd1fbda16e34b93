// GEMM on oneDNN's matmul primitive. Primitives are built once per shape and cached: building
// one JIT-compiles a kernel, which costs far more than a small product.
//
// Where oneDNN has no bf16 matmul for this CPU (no AVX512_BF16 or AVX-512 at all), run_bf16
// widens both operands to fp32 and runs the fp32 primitive. That is the same arithmetic: a
// product of two bf16 values is exact in fp32 and the sums are fp32 either way; it is slower
// and needs the widened copies, but every bf16 code path still runs on every CPU.
//
// Where the CPU multiplies bf16 natively without tiles, a large product whose B is not
// transposed runs on oneDNN's gemm-based kernel rather than its first choice (gemm_onednn.cpp
// says which and why).
//
// Below AVX-512, a B whose rows would make oneDNN's kernels for few-row products thrash the
// cache is copied to a safer stride first (gemm_onednn.cpp says when, and what it gains).
//
// oneDNN's failures are Errors naming the shape: no room for a primitive's kernels
// (backend/jit_room.h), a failed status, a failed allocation.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "backend/gemm.h"

namespace lmforge::backend {

// The oneDNN this process runs on, "3.13.2": --version says it (2.x and 3.x both work).
std::string onednn_version();

// What to warn of where oneDNN runs its kernels on threads of its own (TBB, or SYCL as PyPI's
// onednn-devel does) beside lmforge's OpenMP team, given its CPU runtime
// (dnnl_version()->cpu_runtime) and OMP_WAIT_POLICY (null or empty: unset); empty where there is
// nothing to say. After each of lmforge's kernels the OpenMP threads spin for a while by default,
// taking the cores from oneDNN's threads: on SYCL's oneDNN config C's step took 1.7-1.8x as long
// as on OpenMP's (Zen 5, 2 threads), and with OMP_WAIT_POLICY=passive 2-14% longer.
// OpenMP reads the variable as the process loads, so lmforge cannot set it: the user must.
std::string onednn_thread_warning(unsigned cpu_runtime, const char* wait_policy);

// Whether oneDNN's bf16 products run on matrix tiles (AMX) in this process: the CPU has them,
// and no LMFORGE_ISA cap keeps them out (set first, as every OnednnGemm sets it).
bool onednn_bf16_on_tiles();

// Paths a test can force, so that it covers them on any CPU.
struct OnednnPaths {
    bool widen_bf16 = false;           // widen bf16 operands even where bf16 is native
    bool restride_on_any_isa = false;  // copy colliding B rows on AVX-512 CPUs too
    bool first_choice_kernels = false; // oneDNN's first choice of kernel for every product
};

class OnednnGemm final : public Gemm {
public:
    explicit OnednnGemm(const OnednnPaths& paths = {});
    void run(const GemmShape& s, const float* a, const float* b, float* c,
             const float* bias) override;
    void run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                  const float* bias) override;
    void run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, uint16_t* c,
                  const float* bias) override;
    void run_f16(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c, const float* bias) override;
    std::string_view name() const override { return "onednn"; }
    bool native_bf16() const override { return native_bf16_; }
    bool native_f16() const override { return native_f16_; }
    bool bf16_on_tiles() const override { return bf16_on_tiles_; }
    // The shape oneDNN is given: s, or s with B copied to a stride whose rows do not collide.
    GemmShape as_executed(GemmShape s) const;
    // The name of the kernel oneDNN runs s on with bf16 operands and an fp32 output, with a bias
    // or not ("brg:avx512_core_bf16", "gemm:jit", ...), as its verbose log names it.
    std::string bf16_kernel(const GemmShape& s, bool has_bias = false);

private:
    using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t,
                           bool, bool, int, int>;
    struct Entry {
        dnnl::matmul primitive;
        dnnl::memory::desc a, b, c, bias;
        std::string kernel;  // oneDNN's name for the implementation
    };
    // in: the type of a and b (f32 or bf16); out: c's (f32, or bf16 with bf16 inputs). The
    // bias is f32.
    Entry& entry_for(const GemmShape& s, bool has_bias, dnnl::memory::data_type in,
                     dnnl::memory::data_type out);
    void execute(const GemmShape& s, const void* a, const void* b, void* c, const float* bias,
                 dnnl::memory::data_type in, dnnl::memory::data_type out = dnnl::memory::data_type::f32);

    void run_bf16_widened(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                          const float* bias);

    dnnl::engine engine_;
    dnnl::stream stream_;
    std::map<Key, Entry> cache_;
    bool native_bf16_;
    bool native_f16_;                     // oneDNN multiplies fp16 here
    bool bf16_on_tiles_;
    bool restride_b_;                     // whether colliding B rows are copied (below AVX-512)
    bool gemm_when_b_plain_;              // whether a bf16 B not transposed takes oneDNN's gemm kernel
    std::vector<float> wide_a_;           // run_bf16's A widened, when not native
    std::vector<float> moved_b_;          // B copied: widened, or to a stride that does not collide
    std::vector<float> wide_c_;           // a bf16 output's fp32 sums, when not native
};

}  // namespace lmforge::backend
