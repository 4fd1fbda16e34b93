#include "backend/gemm_onednn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <new>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "backend/gemm_naive.h"
#include "backend/isa.h"
#include "backend/jit_room.h"
#include "core/bf16.h"
#include "core/error.h"
#include "core/log.h"

namespace lmforge::backend {

using dnnl::memory;

namespace {

// The matmul C = A·B (+ bias): oneDNN's first choice of kernel, or its gemm-based one
// ("gemm:jit") where `gemm_based` asks and oneDNN offers it for these operands. oneDNN 3 builds
// the primitive descriptor from the memory descriptors directly; 2.x (Debian 12's 2.6) first
// makes an operation descriptor of them, which must outlive the walk over its kernels.
dnnl::matmul::primitive_desc matmul_desc(const dnnl::engine& engine, const memory::desc& a, const memory::desc& b,
                                         const memory::desc& bias, const memory::desc& c,
                                         const dnnl::primitive_attr& attr, bool gemm_based = false) {
#if DNNL_VERSION_MAJOR >= 3
    dnnl::matmul::primitive_desc pd(engine, a, b, bias, c, attr);  // a zero bias: none
#else
    const dnnl::matmul::desc op(a, b, bias, c);
    dnnl::matmul::primitive_desc pd(op, attr, engine);
#endif
    if (!gemm_based) return pd;
    do {
        if (std::string_view(pd.impl_info_str()).starts_with("gemm:")) return pd;
    } while (pd.next_impl());
    return matmul_desc(engine, a, b, bias, c, attr);
}

// oneDNN's first choice for bf16 on AVX512_BF16 without tiles is its brgemm kernel. With B not
// transposed (Llama's input gradients dY·W, every weight gradient dYᵀ·X), every dimension at
// least 256, and neither a bias nor a bf16 output, its gemm-based kernel is faster: 1.05-1.28x
// alone on Llama-1B's and GPT-2's shapes (Zen 5, 2 threads), matmul_bwd 4-20% less in a step.
// Elsewhere brgemm is as fast or faster: up to 1.9x on LoRA's rank-16 products (K = 16), 1.1x
// with a bias and a bf16 output, which the gemm kernel adds in a pass of its own (GPT-2's
// forward, whose B is plain too), and with B transposed. On tiles brgemm is the kernel that uses
// them.
constexpr int64_t kGemmKernelMinDim = 256;

bool takes_gemm_kernel(const GemmShape& s, bool has_bias, memory::data_type out) {
    return !s.trans_b && !has_bias && out == memory::data_type::f32 && std::min({s.M, s.N, s.K}) >= kGemmKernelMinDim;
}

// Whether oneDNN has a bf16 (fp16) matmul on this CPU: asked once with a small shape.
bool onednn_has_matmul(const dnnl::engine& engine, memory::data_type in) {
    const memory::desc a({16, 16}, in, memory::format_tag::ab);
    const memory::desc c({16, 16}, memory::data_type::f32, memory::format_tag::ab);
    try {
        // Its reference kernel is no matmul to run a model on: hundreds of times slower.
        return !std::string_view(matmul_desc(engine, a, a, memory::desc(), c, dnnl::primitive_attr()).impl_info_str())
                    .starts_with("ref");
    } catch (const dnnl::error&) {
        return false;
    }
}

// oneDNN's sgemm below AVX-512 multiplies a product with few rows (1/M + 1/N >= 0.0038: up to
// M = 263 whatever N) with kernels that read B where it lies instead of packing it first. When
// B's rows are a multiple of 512 floats (2 KiB) apart, the rows such a kernel reads together
// fall into the same cache sets and evict each other: GPT-2 124M's c_fc at 256 rows (K = 768,
// N = 3072) ran at 88-94 GFLOP/s (Zen 3, 2 threads), and at 186-192 with B's rows 16 floats
// further apart. So such a B is copied to that stride first, a pass over B that pays from 16
// rows (with the copy counted: 1.2-1.9x on GPT-2's shapes, 16 to 256 rows). Only a B of at most
// 32 MiB is copied (a large model's c_fc; not a 1024-wide model's whole token table, which the
// LM head multiplies by a few hundred rows at a time): the copy stays allocated with the GEMM,
// and larger ones were never measured.
constexpr int64_t kCollidingStride = 512;
constexpr int64_t kStrideShift = 16;  // one cache line
constexpr int64_t kMinRowsToCopy = 16;
constexpr int64_t kMaxFloatsToCopy = int64_t{8} << 20;

bool b_rows_collide(const GemmShape& s) {
    return !s.trans_b && s.stored_ldb() % kCollidingStride == 0 && s.M >= kMinRowsToCopy &&
           s.K * s.N <= kMaxFloatsToCopy &&
           1.0 / static_cast<double>(s.M) + 1.0 / static_cast<double>(s.N) >= 0.0038;
}

// oneDNN's GEMMs kept to the level LMFORGE_ISA names, as lmforge's own kernels are: at most
// AVX2 for avx2, AVX-512 without AMX for avx512. It takes the cap only before its first
// primitive, so this runs before the first engine; unset, oneDNN takes what the CPU has.
void cap_onednn_isa() {
    static const bool capped = [] {
        const char* asked = std::getenv("LMFORGE_ISA");
        if (asked == nullptr || *asked == '\0') return false;
        const Isa isa = active_isa();
        if (isa == Isa::Native) return false;  // a native build: what the CPU has
        dnnl::set_max_cpu_isa(isa == Isa::Baseline ? dnnl::cpu_isa::sse41
                              : isa == Isa::Avx2   ? dnnl::cpu_isa::avx2
                                                   : dnnl::cpu_isa::avx512_core_bf16);
        return true;
    }();
    (void)capped;
}

// Whether oneDNN's kernels may use AMX here (the CPU has it, and no cap keeps it out).
bool onednn_uses_amx() {
    const auto isa = static_cast<int>(dnnl::get_effective_cpu_isa());
    return (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
}

bool below_avx512() {
    const auto isa = static_cast<int>(dnnl::get_effective_cpu_isa());
    return (isa & dnnl_cpu_isa_avx512_core) != dnnl_cpu_isa_avx512_core;
}

// Copies `rows` rows of `cols` elements, `ld_in` apart, to rows `ld_out` apart in out, as
// floats; what lies between the rows is left unset.
template <class T>
void copy_rows(std::vector<float>& out, const T* in, int64_t rows, int64_t cols, int64_t ld_in,
               int64_t ld_out) {
    out.resize(static_cast<size_t>(rows == 0 ? 0 : (rows - 1) * ld_out + cols));
    float* o = out.data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
#pragma omp simd
        for (int64_t j = 0; j < cols; j++) o[r * ld_out + j] = to_float(in[r * ld_in + j]);
    }
}

// ACTION ("create", "run") of the matmul for s failed: WHY, for want of memory or not.
[[noreturn]] void matmul_failed(const char* action, const GemmShape& s, memory::data_type in,
                                const std::string& why, bool out_of_memory) {
    throw Error(fmt::format("oneDNN could not {} a matmul primitive for M={} N={} K={} ({}): {}", action, s.M, s.N,
                            s.K, in == memory::data_type::bf16 ? "bf16" : "f32", why),
                out_of_memory ? kOutOfMemoryHint : kOnednnRefusedHint);
}

// f(), with oneDNN's failed statuses (dnnl::error; out_of_memory where an allocation failed)
// and failed allocations of its own (std::bad_alloc) turned into matmul_failed's Error.
template <class F>
decltype(auto) guarded(const char* action, const GemmShape& s, memory::data_type in, F&& f) {
    try {
        return f();
    } catch (const dnnl::error& e) {
        const bool oom = e.status == dnnl_out_of_memory;
        matmul_failed(action, s, in, oom ? "out of memory" : e.what(), oom);
    } catch (const std::bad_alloc&) {
        matmul_failed(action, s, in, "out of memory", true);
    }
}

// Room for the kernels oneDNN is about to generate for s (backend/jit_room.h says why).
void require_kernel_room(const GemmShape& s, memory::data_type in) {
    if (has_jit_room()) return;
    matmul_failed("create", s, in,
                  fmt::format("out of memory (less than {} MiB of address space left for its kernels)",
                              kJitRoomBytes >> 20),
                  true);
}

}  // namespace

std::string onednn_version() {
    const dnnl_version_t* v = dnnl_version();
    return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

std::string onednn_thread_warning(unsigned cpu_runtime, const char* wait_policy) {
    // Sequential and threadpool runtimes run on the calling thread (lmforge passes no pool).
    const bool own_threads = cpu_runtime == DNNL_RUNTIME_TBB || cpu_runtime == DNNL_RUNTIME_SYCL;
    if (!own_threads || (wait_policy != nullptr && *wait_policy != '\0')) return {};
    const char* runtime = cpu_runtime == DNNL_RUNTIME_TBB ? "TBB" : "SYCL";
    return fmt::format("oneDNN runs its GEMMs on {} threads, which lmforge's OpenMP threads keep off the cores by "
                       "spinning between kernels: set OMP_WAIT_POLICY=passive (docs/performance.md, Which oneDNN)",
                       runtime);
}

namespace {

// Once a process, as its first GEMM backend starts.
void warn_of_spinning_threads() {
    [[maybe_unused]] static const bool warned = [] {
        const std::string w = onednn_thread_warning(dnnl_version()->cpu_runtime, std::getenv("OMP_WAIT_POLICY"));
        if (!w.empty()) log::warn("{}", w);
        return true;
    }();
}

}  // namespace

bool onednn_bf16_on_tiles() {
    cap_onednn_isa();
    return onednn_uses_amx();
}

OnednnGemm::OnednnGemm(const OnednnPaths& paths)
    : engine_((cap_onednn_isa(), dnnl::engine::kind::cpu), 0),
      stream_(engine_),
      native_bf16_(!paths.widen_bf16 && onednn_has_matmul(engine_, memory::data_type::bf16)),
      native_f16_(onednn_has_matmul(engine_, memory::data_type::f16)),
      bf16_on_tiles_(native_bf16_ && onednn_bf16_on_tiles()),
      restride_b_(paths.restride_on_any_isa || below_avx512()),
      gemm_when_b_plain_(native_bf16_ && !bf16_on_tiles_ && !paths.first_choice_kernels) {
    warn_of_spinning_threads();
}

OnednnGemm::Entry& OnednnGemm::entry_for(const GemmShape& s, bool has_bias, memory::data_type in,
                                         memory::data_type out) {
    const int64_t lda = s.stored_lda(), ldb = s.stored_ldb(), ldc = s.stored_ldc();
    const Key key{s.M, s.N, s.K, s.trans_a, s.trans_b, lda, ldb, ldc, s.accumulate, has_bias,
                  static_cast<int>(in), static_cast<int>(out)};
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;

    // A transposed operand is the same bytes described with swapped strides.
    const memory::desc a({s.M, s.K}, in, s.trans_a ? memory::dims{1, lda} : memory::dims{lda, 1});
    const memory::desc b({s.K, s.N}, in, s.trans_b ? memory::dims{1, ldb} : memory::dims{ldb, 1});
    const memory::desc c({s.M, s.N}, out, memory::dims{ldc, 1});
    const memory::desc bias = has_bias ? memory::desc({1, s.N}, memory::data_type::f32,
                                                      memory::dims{s.N, 1})
                                       : memory::desc();
    require_kernel_room(s, in);
    return guarded("create", s, in, [&]() -> Entry& {
        dnnl::primitive_attr attr;
        if (s.accumulate) {
            dnnl::post_ops ops;
            ops.append_sum(1.0f);  // C = A·B + C
            attr.set_post_ops(ops);
        }
        const bool gemm_based =
            in == memory::data_type::bf16 && gemm_when_b_plain_ && takes_gemm_kernel(s, has_bias, out);
        const dnnl::matmul::primitive_desc pd = matmul_desc(engine_, a, b, bias, c, attr, gemm_based);
        return cache_.emplace(key, Entry{dnnl::matmul(pd), a, b, c, bias, pd.impl_info_str()}).first->second;
    });
}

void OnednnGemm::run(const GemmShape& s, const float* a, const float* b, float* c,
                     const float* bias) {
    if (s.K == 0) {  // an empty sum: oneDNN rejects K = 0, the answer is C (+ bias)
        NaiveGemm().run(s, a, b, c, bias);
        return;
    }
    const GemmShape w = as_executed(s);
    if (w.stored_ldb() != s.stored_ldb()) {
        copy_rows(moved_b_, b, s.K, s.N, s.stored_ldb(), w.stored_ldb());
        b = moved_b_.data();
    }
    execute(w, a, b, c, bias, memory::data_type::f32);
}

void OnednnGemm::run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                          const float* bias) {
    if (s.K == 0) {
        NaiveGemm().run_bf16(s, a, b, c, bias);
        return;
    }
    if (!native_bf16_) {
        run_bf16_widened(s, a, b, c, bias);
        return;
    }
    execute(s, a, b, c, bias, memory::data_type::bf16);
}

void OnednnGemm::run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, uint16_t* c,
                          const float* bias) {
    assert(!s.accumulate && "a bf16 output is never accumulated into");
    if (s.K == 0 || !native_bf16_) {  // the fp32 sums, then rounded
        const int64_t ldc = s.stored_ldc();
        GemmShape tight = s;
        tight.ldc = s.N;
        wide_c_.resize(static_cast<size_t>(s.M * s.N));
        run_bf16(tight, a, b, wide_c_.data(), bias);
        const float* w = wide_c_.data();
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < s.M; r++) {
#pragma omp simd
            for (int64_t j = 0; j < s.N; j++) c[r * ldc + j] = to_bf16(w[r * s.N + j]);
        }
        return;
    }
    execute(s, a, b, c, bias, memory::data_type::bf16, memory::data_type::bf16);
}

void OnednnGemm::run_f16(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c, const float* bias) {
    if (!native_f16_) Gemm::run_f16(s, a, b, c, bias);  // refused
    if (s.K == 0) {  // an empty sum: C (+ bias), whatever the operands
        NaiveGemm().run(s, nullptr, nullptr, c, bias);
        return;
    }
    execute(s, a, b, c, bias, memory::data_type::f16);
}

void OnednnGemm::run_bf16_widened(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                                  const float* bias) {
    // The widened copies keep the operands' strides, unless B's rows collide (see above).
    const GemmShape w = as_executed(s);
    const auto [a_rows, a_cols] = s.trans_a ? std::pair{s.K, s.M} : std::pair{s.M, s.K};
    const auto [b_rows, b_cols] = s.trans_b ? std::pair{s.N, s.K} : std::pair{s.K, s.N};
    copy_rows(wide_a_, a, a_rows, a_cols, s.stored_lda(), s.stored_lda());
    copy_rows(moved_b_, b, b_rows, b_cols, s.stored_ldb(), w.stored_ldb());
    execute(w, wide_a_.data(), moved_b_.data(), c, bias, memory::data_type::f32);
}

std::string OnednnGemm::bf16_kernel(const GemmShape& s, bool has_bias) {
    if (!native_bf16_) return entry_for(as_executed(s), has_bias, memory::data_type::f32, memory::data_type::f32).kernel;
    return entry_for(s, has_bias, memory::data_type::bf16, memory::data_type::f32).kernel;
}

GemmShape OnednnGemm::as_executed(GemmShape s) const {
    if (restride_b_ && b_rows_collide(s)) s.ldb = s.stored_ldb() + kStrideShift;
    return s;
}

void OnednnGemm::execute(const GemmShape& s, const void* a, const void* b, void* c, const float* bias,
                         memory::data_type in, memory::data_type out) {
    if (s.M == 0 || s.N == 0) return;
    Entry& e = entry_for(s, bias != nullptr, in, out);
    guarded("run", s, in, [&] {  // its scratchpad is allocated here
        // oneDNN takes non-const handles; it only reads sources.
        memory ma(e.a, engine_, const_cast<void*>(a));
        memory mb(e.b, engine_, const_cast<void*>(b));
        memory mc(e.c, engine_, c);
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
        if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, memory(e.bias, engine_, const_cast<float*>(bias)));
        e.primitive.execute(stream_, args);
        stream_.wait();
    });
}

GemmKind parse_gemm_kind(const std::string& name) {
    if (name == "onednn") return GemmKind::Onednn;
    if (name == "naive") return GemmKind::Naive;
    throw InputError(fmt::format("unknown GEMM backend '{}'", name), "use onednn or naive");
}

std::unique_ptr<Gemm> make_gemm(GemmKind kind) {
    switch (kind) {
        case GemmKind::Onednn: return std::make_unique<OnednnGemm>();
        case GemmKind::Naive: return std::make_unique<NaiveGemm>();
    }
    return nullptr;
}

}  // namespace lmforge::backend
