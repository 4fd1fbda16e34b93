// One GEMM interface for every matrix product in lmforge, so oneDNN and the naive reference
// are interchangeable and tested against each other.
//
//   C (M, N) = op(A) (M, K) · op(B) (K, N)  [+ C when accumulate]  [+ bias (N) on every row]
//
// All matrices are row-major with leading dimensions lda/ldb/ldc (elements between rows as
// stored). op(X) is X, or Xᵀ when trans_x is set: a transposed A is stored as (K, M).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lmforge::backend {

struct GemmShape {
    int64_t M = 0, N = 0, K = 0;
    bool trans_a = false, trans_b = false;
    int64_t lda = 0, ldb = 0, ldc = 0;  // 0: tight (the stored row length)
    bool accumulate = false;            // C += instead of C =

    int64_t stored_lda() const { return lda != 0 ? lda : (trans_a ? M : K); }
    int64_t stored_ldb() const { return ldb != 0 ? ldb : (trans_b ? K : N); }
    int64_t stored_ldc() const { return ldc != 0 ? ldc : N; }
    double flops() const { return 2.0 * static_cast<double>(M) * N * K; }
};

class Gemm {
public:
    virtual ~Gemm() = default;
    // bias may be null. a, b and c must not overlap.
    virtual void run(const GemmShape& s, const float* a, const float* b, float* c,
                     const float* bias = nullptr) = 0;
    // The same with a and b in bfloat16 (mixed precision): products accumulated in fp32,
    // c and bias fp32.
    virtual void run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                          const float* bias = nullptr) = 0;
    // The same with c in bfloat16: the fp32 sum (with the bias) rounded once, to nearest. For
    // an output kept only for later bf16 work (mixed precision's saved activations). It cannot
    // accumulate: s.accumulate must be false.
    virtual void run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, uint16_t* c,
                          const float* bias = nullptr) = 0;
    // The same with a and b in IEEE half precision (fp16), products accumulated in fp32: only
    // where native_f16() (a logic_error elsewhere).
    virtual void run_f16(const GemmShape& /*s*/, const uint16_t* /*a*/, const uint16_t* /*b*/, float* /*c*/,
                         const float* /*bias*/ = nullptr) {
        throw std::logic_error("run_f16 on a GEMM without fp16 multiplication");
    }
    virtual std::string_view name() const = 0;
    // Whether run_bf16 multiplies in bf16 on this CPU (rather than widening to fp32 first):
    // kernels that choose between doing less work and running bigger GEMMs ask.
    virtual bool native_bf16() const { return false; }
    // Whether run_bf16 multiplies on matrix tiles (AMX), whose GEMMs favour other shapes than
    // vector units do.
    virtual bool bf16_on_tiles() const { return false; }
    // Whether run_f16 multiplies fp16 on this CPU: oneDNN has an fp16 matmul for it (AVX512_FP16
    // or AMX-FP16 CPUs, with a oneDNN that knows them).
    virtual bool native_f16() const { return false; }
};

enum class GemmKind { Onednn, Naive };

GemmKind parse_gemm_kind(const std::string& name);  // "onednn" | "naive"; InputError otherwise
std::unique_ptr<Gemm> make_gemm(GemmKind kind);

}  // namespace lmforge::backend
