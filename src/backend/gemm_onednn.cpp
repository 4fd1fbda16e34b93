#include "backend/gemm_onednn.h"

#include <fmt/format.h>

#include <unordered_map>

#include "backend/gemm_naive.h"
#include "kernels/bf16.h"
#include "core/error.h"

namespace lmforge::backend {

using dnnl::memory;

namespace {

// Whether oneDNN has a bf16 matmul on this CPU: asked once with a small shape.
bool onednn_has_bf16_matmul(const dnnl::engine& engine) {
    const memory::desc a({16, 16}, memory::data_type::bf16, memory::format_tag::ab);
    const memory::desc c({16, 16}, memory::data_type::f32, memory::format_tag::ab);
    try {
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, a, c), engine);
        return true;
    } catch (const dnnl::error&) {
        return false;
    }
}

// The stored elements of an operand with `rows` rows of `cols` used elements, `ld` apart.
int64_t stored_extent(int64_t rows, int64_t cols, int64_t ld) { return rows == 0 ? 0 : (rows - 1) * ld + cols; }

void widen(std::vector<float>& out, const uint16_t* in, int64_t n) {
    out.resize(static_cast<size_t>(n));
    float* o = out.data();
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) o[i] = from_bf16(in[i]);
}

}  // namespace

OnednnGemm::OnednnGemm(bool widen_bf16)
    : engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_),
      native_bf16_(!widen_bf16 && onednn_has_bf16_matmul(engine_)) {}

OnednnGemm::Entry& OnednnGemm::entry_for(const GemmShape& s, bool has_bias, memory::data_type in) {
    const int64_t lda = s.stored_lda(), ldb = s.stored_ldb(), ldc = s.stored_ldc();
    const Key key{s.M, s.N, s.K, s.trans_a, s.trans_b, lda, ldb, ldc, s.accumulate, has_bias,
                  static_cast<int>(in)};
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;

    // A transposed operand is the same bytes described with swapped strides.
    const memory::desc a({s.M, s.K}, in, s.trans_a ? memory::dims{1, lda} : memory::dims{lda, 1});
    const memory::desc b({s.K, s.N}, in, s.trans_b ? memory::dims{1, ldb} : memory::dims{ldb, 1});
    const memory::desc c({s.M, s.N}, memory::data_type::f32, memory::dims{ldc, 1});
    const memory::desc bias = has_bias ? memory::desc({1, s.N}, memory::data_type::f32,
                                                      memory::dims{s.N, 1})
                                       : memory::desc();
    dnnl::primitive_attr attr;
    if (s.accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);  // C = A·B + C
        attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, bias, c), attr, engine_);
    return cache_.emplace(key, Entry{dnnl::matmul(pd), a, b, c, bias}).first->second;
}

void OnednnGemm::run(const GemmShape& s, const float* a, const float* b, float* c,
                     const float* bias) {
    if (s.K == 0) {  // an empty sum: oneDNN rejects K = 0, the answer is C (+ bias)
        NaiveGemm().run(s, a, b, c, bias);
        return;
    }
    execute(s, a, b, c, bias, memory::data_type::f32);
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

void OnednnGemm::run_bf16_widened(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                                  const float* bias) {
    // The widened copies keep the operands' strides, so the shape is unchanged.
    widen(wide_a_, a, s.trans_a ? stored_extent(s.K, s.M, s.stored_lda()) : stored_extent(s.M, s.K, s.stored_lda()));
    widen(wide_b_, b, s.trans_b ? stored_extent(s.N, s.K, s.stored_ldb()) : stored_extent(s.K, s.N, s.stored_ldb()));
    execute(s, wide_a_.data(), wide_b_.data(), c, bias, memory::data_type::f32);
}

void OnednnGemm::execute(const GemmShape& s, const void* a, const void* b, float* c, const float* bias,
                         memory::data_type in) {
    if (s.M == 0 || s.N == 0) return;
    Entry& e = entry_for(s, bias != nullptr, in);
    // oneDNN takes non-const handles; it only reads sources.
    memory ma(e.a, engine_, const_cast<void*>(a));
    memory mb(e.b, engine_, const_cast<void*>(b));
    memory mc(e.c, engine_, c);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, memory(e.bias, engine_, const_cast<float*>(bias)));
    e.primitive.execute(stream_, args);
    stream_.wait();
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
