// The kernels' public functions, each calling its build for the level the process runs at
// (backend/isa.h): the one place that says which build of a kernel runs. Every kernel file is
// compiled once per level into a namespace of the level's name (kernels/isa_begin.h); here
// each public function forwards to the active level's, at the cost of one predictable branch.
#include <cstdint>

#include "backend/isa.h"
#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/attention_decode.h"
#include "kernels/bf16.h"
#include "kernels/classifier.h"
#include "kernels/cosine_distance.h"
#include "kernels/encoder.h"
#include "kernels/fp16.h"
#include "kernels/gelu.h"
#include "kernels/grad_norm.h"
#include "kernels/layernorm.h"
#include "kernels/linear.h"
#include "kernels/lm_head_loss.h"
#include "kernels/matmul.h"
#include "kernels/relu.h"
#include "kernels/residual.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/soft_targets.h"
#include "kernels/swiglu.h"
#include "kernels/tanh.h"

namespace lmforge::kernels {

#if defined(LMFORGE_KERNELS_PORTABLE)
// The declaration of a kernel in each level's namespace, then the public function.
#define LMFORGE_KERNEL(ret, name, params, args)                              \
    namespace baseline {                                                     \
    ret name params;                                                         \
    }                                                                        \
    namespace avx2 {                                                         \
    ret name params;                                                         \
    }                                                                        \
    namespace avx512 {                                                       \
    ret name params;                                                         \
    }                                                                        \
    ret name params {                                                        \
        switch (backend::active_isa()) {                                     \
            case backend::Isa::Avx512:                                       \
                return avx512::name args;                                    \
            case backend::Isa::Avx2:                                         \
                return avx2::name args;                                      \
            default:                                                         \
                return baseline::name args;                                  \
        }                                                                    \
    }
// A template's kernels, declared in each level's namespace (its instantiations are there).
#define LMFORGE_KERNEL_TEMPLATE_DECL(ret, name, params) \
    namespace baseline {                                \
    template <class In>                                 \
    ret name params;                                    \
    }                                                   \
    namespace avx2 {                                    \
    template <class In>                                 \
    ret name params;                                    \
    }                                                   \
    namespace avx512 {                                  \
    template <class In>                                 \
    ret name params;                                    \
    }
#define LMFORGE_KERNEL_INSTANCE(ret, name, In, params, args) \
    template <>                                              \
    ret name<In> params {                                    \
        switch (backend::active_isa()) {                     \
            case backend::Isa::Avx512:                       \
                return avx512::name<In> args;                \
            case backend::Isa::Avx2:                         \
                return avx2::name<In> args;                  \
            default:                                         \
                return baseline::name<In> args;              \
        }                                                    \
    }
#else
// A native build: one build of each kernel.
#define LMFORGE_KERNEL(ret, name, params, args) \
    namespace native {                          \
    ret name params;                            \
    }                                           \
    ret name params { return native::name args; }
#define LMFORGE_KERNEL_TEMPLATE_DECL(ret, name, params) \
    namespace native {                                  \
    template <class In>                                 \
    ret name params;                                    \
    }
#define LMFORGE_KERNEL_INSTANCE(ret, name, In, params, args) \
    template <>                                              \
    ret name<In> params {                                    \
        return native::name<In> args;                        \
    }
#endif

// adamw.h
LMFORGE_KERNEL(void, adamw_update,
               (float* params, float* m, float* v, const float* grads, int64_t n, const AdamWHyper& h,
                uint16_t* mirror),
               (params, m, v, grads, n, h, mirror))
LMFORGE_KERNEL(void, adamw_update,
               (float* params, uint16_t* m, uint16_t* v, const float* grads, int64_t n, const AdamWHyper& h,
                int64_t first_index, uint16_t* mirror),
               (params, m, v, grads, n, h, first_index, mirror))
LMFORGE_KERNEL(void, adamw_update,
               (float* params, float* m, float* v, const uint16_t* grads, int64_t n, const AdamWHyper& h,
                uint16_t* mirror),
               (params, m, v, grads, n, h, mirror))
LMFORGE_KERNEL(void, adamw_update,
               (float* params, uint16_t* m, uint16_t* v, const uint16_t* grads, int64_t n, const AdamWHyper& h,
                int64_t first_index, uint16_t* mirror),
               (params, m, v, grads, n, h, first_index, mirror))

// attention.h, attention_decode.h
LMFORGE_KERNEL(void, attention_forward,
               (float* out, float* lse, const float* qkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                int64_t NKV, const AttentionMask& mask, AttentionMath math),
               (out, lse, qkv, B, T, C, NH, NKV, mask, math))
LMFORGE_KERNEL(void, attention_backward,
               (float* dqkv, const float* dout, const float* out, const float* lse, const float* qkv, int64_t B,
                int64_t T, int64_t C, int64_t NH, int64_t NKV, const AttentionMask& mask, AttentionMath math),
               (dqkv, dout, out, lse, qkv, B, T, C, NH, NKV, mask, math))
LMFORGE_KERNEL(void, attention_forward,
               (float* out, float* lse, const bf16* qkv, int64_t B, int64_t T, int64_t C, int64_t NH, int64_t NKV,
                const AttentionMask& mask, AttentionMath math),
               (out, lse, qkv, B, T, C, NH, NKV, mask, math))
LMFORGE_KERNEL(void, attention_backward,
               (float* dqkv, const float* dout, const float* out, const float* lse, const bf16* qkv, int64_t B,
                int64_t T, int64_t C, int64_t NH, int64_t NKV, const AttentionMask& mask, AttentionMath math),
               (dqkv, dout, out, lse, qkv, B, T, C, NH, NKV, mask, math))
LMFORGE_KERNEL(bool, attention_has_bf16_math, (), ())
LMFORGE_KERNEL(void, attention_decode,
               (float* out, const float* q, const float* kcache, const float* vcache, int64_t n, int64_t stride,
                int64_t C, int64_t NH, int64_t NKV, float* scratch),
               (out, q, kcache, vcache, n, stride, C, NH, NKV, scratch))

// bf16.h, classifier.h, encoder.h
LMFORGE_KERNEL(void, to_bf16, (bf16 * out, const float* in, int64_t n), (out, in, n))
LMFORGE_KERNEL(void, add_to_bf16, (bf16 * acc, const float* in, int64_t n), (acc, in, n))
LMFORGE_KERNEL(void, classifier_forward,
               (float* logits, float* losses, const float* h, const float* score, const float* bias,
                const int32_t* labels, int64_t B, int64_t C, int64_t L),
               (logits, losses, h, score, bias, labels, B, C, L))
LMFORGE_KERNEL(void, classifier_backward,
               (float* dh, float* dscore, float* dbias, bool accumulate, const float* logits, const float* h,
                const float* score, const int32_t* labels, float dloss, int64_t B, int64_t C, int64_t L),
               (dh, dscore, dbias, accumulate, logits, h, score, labels, dloss, B, C, L))
LMFORGE_KERNEL(void, encoder_forward,
               (float* out, const int32_t* inp, const float* wte, const float* wpe, int64_t B, int64_t T, int64_t C),
               (out, inp, wte, wpe, B, T, C))
LMFORGE_KERNEL(void, encoder_backward,
               (float* dwte, float* dwpe, const float* dout, const int32_t* inp, int64_t B, int64_t T, int64_t C),
               (dwte, dwpe, dout, inp, B, T, C))
LMFORGE_KERNEL(void, token_embedding_forward, (float* out, const int32_t* inp, const float* wte, int64_t N, int64_t C),
               (out, inp, wte, N, C))
LMFORGE_KERNEL(void, token_embedding_forward, (float* out, const int32_t* inp, const uint16_t* wte, int64_t N, int64_t C),
               (out, inp, wte, N, C))
LMFORGE_KERNEL(void, token_embedding_backward,
               (float* dwte, const float* dout, const int32_t* inp, int64_t N, int64_t C), (dwte, dout, inp, N, C))
LMFORGE_KERNEL(void, token_embedding_backward,
               (uint16_t* dwte, const float* dout, const int32_t* inp, int64_t N, int64_t C), (dwte, dout, inp, N, C))
LMFORGE_KERNEL(void, encoder_backward,
               (uint16_t* dwte, float* dwpe, const float* dout, const int32_t* inp, int64_t B, int64_t T, int64_t C),
               (dwte, dwpe, dout, inp, B, T, C))

// gelu.h
LMFORGE_KERNEL(void, gelu_forward, (float* out, const float* inp, int64_t n), (out, inp, n))
LMFORGE_KERNEL(void, gelu_forward, (bf16 * out, const float* inp, int64_t n), (out, inp, n))
LMFORGE_KERNEL(void, gelu_forward, (bf16 * out, const bf16* inp, int64_t n), (out, inp, n))
LMFORGE_KERNEL(void, gelu_backward, (float* dinp, const float* dout, const float* inp, int64_t n),
               (dinp, dout, inp, n))
LMFORGE_KERNEL(void, gelu_backward_bf16_bias,
               (bf16 * dinp_h, float* dbias, const float* dout, const float* inp, int64_t rows, int64_t cols),
               (dinp_h, dbias, dout, inp, rows, cols))
LMFORGE_KERNEL(void, gelu_backward_bf16_bias,
               (bf16 * dinp_h, float* dbias, const float* dout, const bf16* inp, int64_t rows, int64_t cols),
               (dinp_h, dbias, dout, inp, rows, cols))
LMFORGE_KERNEL(void, gelu_erf_forward, (float* out, const float* inp, int64_t n), (out, inp, n))
LMFORGE_KERNEL(void, gelu_erf_forward, (bf16 * out, const float* inp, int64_t n), (out, inp, n))
LMFORGE_KERNEL(void, gelu_erf_forward, (bf16 * out, const bf16* inp, int64_t n), (out, inp, n))
LMFORGE_KERNEL(void, gelu_erf_backward, (float* dinp, const float* dout, const float* inp, int64_t n),
               (dinp, dout, inp, n))
LMFORGE_KERNEL(void, gelu_erf_backward, (float* dinp, const float* dout, const bf16* inp, int64_t n),
               (dinp, dout, inp, n))

// grad_norm.h
LMFORGE_KERNEL(double, sum_of_squares, (const float* x, int64_t n), (x, n))
LMFORGE_KERNEL(double, sum_of_squares, (const uint16_t* x, int64_t n), (x, n))
LMFORGE_KERNEL(void, scale_inplace, (float* x, int64_t n, float scale), (x, n, scale))

// layernorm.h
LMFORGE_KERNEL(void, layernorm_forward,
               (float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                int64_t N, int64_t C, float eps),
               (out, mean, rstd, inp, weight, bias, N, C, eps))
LMFORGE_KERNEL(void, layernorm_forward,
               (bf16 * out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                int64_t N, int64_t C, float eps),
               (out, mean, rstd, inp, weight, bias, N, C, eps))
LMFORGE_KERNEL(void, residual_layernorm_forward,
               (float* res, float* out, float* mean, float* rstd, const float* a, const float* b, const float* weight,
                const float* bias, int64_t N, int64_t C, float eps),
               (res, out, mean, rstd, a, b, weight, bias, N, C, eps))
LMFORGE_KERNEL(void, residual_layernorm_forward,
               (float* res, bf16* out, float* mean, float* rstd, const float* a, const float* b, const float* weight,
                const float* bias, int64_t N, int64_t C, float eps),
               (res, out, mean, rstd, a, b, weight, bias, N, C, eps))
LMFORGE_KERNEL(void, layernorm_backward,
               (float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                const float* mean, const float* rstd, int64_t N, int64_t C),
               (dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C))
LMFORGE_KERNEL(void, layernorm_backward,
               (float* dinp, bf16* dinp_h, float* dinp_sums, float* dweight, float* dbias, const float* dout,
                const float* inp, const float* weight, const float* mean, const float* rstd, int64_t N, int64_t C),
               (dinp, dinp_h, dinp_sums, dweight, dbias, dout, inp, weight, mean, rstd, N, C))

// rmsnorm.h
LMFORGE_KERNEL(void, rmsnorm_forward,
               (float* out, float* rstd, const float* inp, const float* weight, int64_t N, int64_t C, float eps),
               (out, rstd, inp, weight, N, C, eps))
LMFORGE_KERNEL(void, rmsnorm_forward,
               (bf16 * out, float* rstd, const float* inp, const float* weight, int64_t N, int64_t C, float eps),
               (out, rstd, inp, weight, N, C, eps))
LMFORGE_KERNEL(void, residual_rmsnorm_forward,
               (float* res, float* out, float* rstd, const float* a, const float* b, const float* weight, int64_t N,
                int64_t C, float eps),
               (res, out, rstd, a, b, weight, N, C, eps))
LMFORGE_KERNEL(void, residual_rmsnorm_forward,
               (float* res, bf16* out, float* rstd, const float* a, const float* b, const float* weight, int64_t N,
                int64_t C, float eps),
               (res, out, rstd, a, b, weight, N, C, eps))
LMFORGE_KERNEL(void, rmsnorm_backward,
               (float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                const float* rstd, int64_t N, int64_t C),
               (dinp, dweight, dout, inp, weight, rstd, N, C))
LMFORGE_KERNEL(void, rmsnorm_backward,
               (float* dinp, bf16* dinp_h, float* dweight, const float* dout, const float* inp, const float* weight,
                const float* rstd, int64_t N, int64_t C),
               (dinp, dinp_h, dweight, dout, inp, weight, rstd, N, C))

// rope.h
LMFORGE_KERNEL(void, rope_inv_freq, (float* inv_freq, int64_t HS, double theta, const Llama3RopeScaling* scaling),
               (inv_freq, HS, theta, scaling))
LMFORGE_KERNEL(void, rope_tables,
               (float* cos, float* sin, const float* inv_freq, int64_t HS, int64_t pos0, int64_t T),
               (cos, sin, inv_freq, HS, pos0, T))
LMFORGE_KERNEL(void, rope_forward,
               (float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t stride, int64_t heads,
                int64_t HS),
               (x, cos, sin, B, T, stride, heads, HS))
LMFORGE_KERNEL(void, rope_forward,
               (bf16 * out, const float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t stride,
                int64_t heads, int64_t HS),
               (out, x, cos, sin, B, T, stride, heads, HS))
LMFORGE_KERNEL(void, rope_backward,
               (float* dx, const float* cos, const float* sin, int64_t B, int64_t T, int64_t stride, int64_t heads,
                int64_t HS),
               (dx, cos, sin, B, T, stride, heads, HS))

// swiglu.h
LMFORGE_KERNEL(void, swiglu_forward, (float* out, const float* gate_up, int64_t N, int64_t H), (out, gate_up, N, H))
LMFORGE_KERNEL(void, swiglu_forward, (bf16 * out, const float* gate_up, int64_t N, int64_t H), (out, gate_up, N, H))
LMFORGE_KERNEL(void, swiglu_forward, (bf16 * out, const bf16* gate_up, int64_t N, int64_t H), (out, gate_up, N, H))
LMFORGE_KERNEL(void, swiglu_forward, (bf16 * out, bf16* gate_up_h, const float* gate_up, int64_t N, int64_t H),
               (out, gate_up_h, gate_up, N, H))
LMFORGE_KERNEL(void, swiglu_backward, (float* dgate_up, const float* dout, const float* gate_up, int64_t N, int64_t H),
               (dgate_up, dout, gate_up, N, H))
LMFORGE_KERNEL(void, swiglu_backward, (bf16 * dgate_up, const float* dout, const float* gate_up, int64_t N, int64_t H),
               (dgate_up, dout, gate_up, N, H))
LMFORGE_KERNEL(void, swiglu_backward, (bf16 * dgate_up, const float* dout, const bf16* gate_up, int64_t N, int64_t H),
               (dgate_up, dout, gate_up, N, H))

// linear.h, matmul.h
LMFORGE_KERNEL(void, linear_forward,
               (backend::Gemm & gemm, float* out, const float* inp, const float* weight, const float* bias, int64_t N,
                int64_t C, int64_t OC),
               (gemm, out, inp, weight, bias, N, C, OC))
LMFORGE_KERNEL(void, linear_backward,
               (backend::Gemm & gemm, float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                const float* weight, int64_t N, int64_t C, int64_t OC, WeightGrad mode),
               (gemm, dinp, dweight, dbias, dout, inp, weight, N, C, OC, mode))
LMFORGE_KERNEL(void, linear_forward_bf16,
               (backend::Gemm & gemm, float* out, const uint16_t* inp, const uint16_t* weight, const float* bias,
                int64_t N, int64_t C, int64_t OC),
               (gemm, out, inp, weight, bias, N, C, OC))
LMFORGE_KERNEL(void, linear_forward_bf16,
               (backend::Gemm & gemm, bf16* out, const uint16_t* inp, const uint16_t* weight, const float* bias,
                int64_t N, int64_t C, int64_t OC),
               (gemm, out, inp, weight, bias, N, C, OC))
LMFORGE_KERNEL(void, linear_backward_bf16,
               (backend::Gemm & gemm, float* dinp, float* dweight, float* dbias, const float* dout,
                const uint16_t* dout_bf16, const uint16_t* inp, const uint16_t* weight, int64_t N, int64_t C,
                int64_t OC, WeightGrad mode),
               (gemm, dinp, dweight, dbias, dout, dout_bf16, inp, weight, N, C, OC, mode))
LMFORGE_KERNEL(void, matmul_forward,
               (backend::Gemm & gemm, float* out, const float* inp, const float* weight, const float* bias, int64_t N,
                int64_t C, int64_t OC),
               (gemm, out, inp, weight, bias, N, C, OC))
LMFORGE_KERNEL(void, matmul_backward,
               (backend::Gemm & gemm, float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                const float* weight, int64_t N, int64_t C, int64_t OC, WeightGrad mode),
               (gemm, dinp, dweight, dbias, dout, inp, weight, N, C, OC, mode))
LMFORGE_KERNEL(void, matmul_forward_bf16,
               (backend::Gemm & gemm, float* out, const uint16_t* inp, const uint16_t* weight, const float* bias,
                int64_t N, int64_t C, int64_t OC),
               (gemm, out, inp, weight, bias, N, C, OC))
LMFORGE_KERNEL(void, matmul_forward_bf16,
               (backend::Gemm & gemm, bf16* out, const uint16_t* inp, const uint16_t* weight, const float* bias,
                int64_t N, int64_t C, int64_t OC),
               (gemm, out, inp, weight, bias, N, C, OC))
LMFORGE_KERNEL(void, matmul_backward_bf16,
               (backend::Gemm & gemm, float* dinp, float* dweight, float* dbias, const float* dout,
                const uint16_t* dout_bf16, const uint16_t* inp, const uint16_t* weight, int64_t N, int64_t C,
                int64_t OC, WeightGrad mode),
               (gemm, dinp, dweight, dbias, dout, dout_bf16, inp, weight, N, C, OC, mode))
LMFORGE_KERNEL(void, bias_backward, (float* dbias, const float* dout, int64_t N, int64_t OC), (dbias, dout, N, OC))
LMFORGE_KERNEL(void, to_bf16_with_bias_backward,
               (uint16_t * dout_h, float* dbias, const float* dout, int64_t N, int64_t OC),
               (dout_h, dbias, dout, N, OC))

// residual.h, relu.h, tanh.h
LMFORGE_KERNEL(void, residual_forward, (float* out, const float* a, const float* b, int64_t n), (out, a, b, n))
LMFORGE_KERNEL(void, residual_backward, (float* da, float* db, const float* dout, int64_t n), (da, db, dout, n))
LMFORGE_KERNEL(void, relu_forward, (float* out, const float* inp, int64_t n), (out, inp, n))
LMFORGE_KERNEL(void, relu_backward, (float* dinp, const float* dout, const float* out, int64_t n),
               (dinp, dout, out, n))
LMFORGE_KERNEL(void, tanh_forward, (float* out, const float* inp, int64_t n), (out, inp, n))
LMFORGE_KERNEL(void, tanh_backward, (float* dinp, const float* dout, const float* out, int64_t n),
               (dinp, dout, out, n))

// fp16.h
LMFORGE_KERNEL(void, round_to_fp16, (float* out, const float* in, int64_t n), (out, in, n))
LMFORGE_KERNEL(void, to_fp16, (uint16_t* out, const float* in, int64_t n), (out, in, n))

// soft_targets.h
LMFORGE_KERNEL(void, teacher_log_probs,
               (float* logp, const float* logits, const int32_t* rows, int64_t M, int64_t V, int64_t stride,
                float temperature),
               (logp, logits, rows, M, V, stride, temperature))

// lm_head_loss.h
LMFORGE_KERNEL(int64_t, lm_head_chunk, (int64_t N, int64_t V), (N, V))
LMFORGE_KERNEL(int64_t, lm_head_rows, (int64_t N, int64_t V), (N, V))
LMFORGE_KERNEL(int64_t, lm_head_row_stride, (int64_t V), (V))
LMFORGE_KERNEL(bool, lm_head_one_pass, (const backend::Gemm& gemm, bool bf16_inputs), (gemm, bf16_inputs))
LMFORGE_KERNEL(int64_t, lm_head_scratch, (int64_t N, int64_t V, bool one_pass), (N, V, one_pass))
LMFORGE_KERNEL(int64_t, lm_head_dlogits_scratch, (int64_t N, int64_t V, bool one_pass, bool bias),
               (N, V, one_pass, bias))

#define LMFORGE_HEAD_FORWARD_PARAMS(In)                                                                        \
    (backend::Gemm & gemm, const LmHeadLossShape& s, float* losses, float* lse, const In* x, const In* wte,   \
     const float* bias, const int32_t* targets, float* logits_chunk, float* target_logit, float* row_max)
#define LMFORGE_HEAD_BACKWARD_PARAMS(In)                                                                         \
    (backend::Gemm & gemm, const LmHeadLossShape& s, float* dx, GradOut dwte, float* dbias, bool accumulate,    \
     const In* x, const In* wte, const float* bias, const float* lse, const int32_t* targets, float dloss,      \
     float* logits_chunk, In* dlogits_chunk)
#define LMFORGE_HEAD_TRAIN_PARAMS(In)                                                                            \
    (backend::Gemm & gemm, const LmHeadLossShape& s, float* losses, float* lse, float* dx, GradOut dwte,       \
     float* dbias, bool accumulate, const In* x, const In* wte, const float* bias, const int32_t* targets,      \
     float dloss, float* logits_block, In* dlogits_block, float* target_logit, float* row_max,                   \
     const SoftTargets* soft)
#define LMFORGE_HEAD_FORWARD_ARGS (gemm, s, losses, lse, x, wte, bias, targets, logits_chunk, target_logit, row_max)
#define LMFORGE_HEAD_BACKWARD_ARGS \
    (gemm, s, dx, dwte, dbias, accumulate, x, wte, bias, lse, targets, dloss, logits_chunk, dlogits_chunk)
#define LMFORGE_HEAD_TRAIN_ARGS                                                                                    \
    (gemm, s, losses, lse, dx, dwte, dbias, accumulate, x, wte, bias, targets, dloss, logits_block, dlogits_block, \
     target_logit, row_max, soft)

#define LMFORGE_COSINE_PARAMS(In)                                                                               \
    (float* dh, float* loss, const In* h, const float* t, const int32_t* rows, int64_t M, int64_t C, float scale)
#define LMFORGE_COSINE_ARGS (dh, loss, h, t, rows, M, C, scale)
LMFORGE_KERNEL_TEMPLATE_DECL(void, cosine_distance_backward, LMFORGE_COSINE_PARAMS(In))
LMFORGE_KERNEL_INSTANCE(void, cosine_distance_backward, float, LMFORGE_COSINE_PARAMS(float), LMFORGE_COSINE_ARGS)
LMFORGE_KERNEL_INSTANCE(void, cosine_distance_backward, bf16, LMFORGE_COSINE_PARAMS(bf16), LMFORGE_COSINE_ARGS)

LMFORGE_KERNEL_TEMPLATE_DECL(void, lm_head_loss_forward, LMFORGE_HEAD_FORWARD_PARAMS(In))
LMFORGE_KERNEL_TEMPLATE_DECL(void, lm_head_loss_backward, LMFORGE_HEAD_BACKWARD_PARAMS(In))
LMFORGE_KERNEL_TEMPLATE_DECL(void, lm_head_loss_train, LMFORGE_HEAD_TRAIN_PARAMS(In))
LMFORGE_KERNEL_INSTANCE(void, lm_head_loss_forward, float, LMFORGE_HEAD_FORWARD_PARAMS(float), LMFORGE_HEAD_FORWARD_ARGS)
LMFORGE_KERNEL_INSTANCE(void, lm_head_loss_forward, bf16, LMFORGE_HEAD_FORWARD_PARAMS(bf16), LMFORGE_HEAD_FORWARD_ARGS)
LMFORGE_KERNEL_INSTANCE(void, lm_head_loss_backward, float, LMFORGE_HEAD_BACKWARD_PARAMS(float),
                        LMFORGE_HEAD_BACKWARD_ARGS)
LMFORGE_KERNEL_INSTANCE(void, lm_head_loss_backward, bf16, LMFORGE_HEAD_BACKWARD_PARAMS(bf16),
                        LMFORGE_HEAD_BACKWARD_ARGS)
LMFORGE_KERNEL_INSTANCE(void, lm_head_loss_train, float, LMFORGE_HEAD_TRAIN_PARAMS(float), LMFORGE_HEAD_TRAIN_ARGS)
LMFORGE_KERNEL_INSTANCE(void, lm_head_loss_train, bf16, LMFORGE_HEAD_TRAIN_PARAMS(bf16), LMFORGE_HEAD_TRAIN_ARGS)

}  // namespace lmforge::kernels
