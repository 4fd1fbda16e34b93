#include "model/fp16_gemm.h"

#include "kernels/fp16.h"

namespace lmforge {

namespace {

// X's stored rows × cols (leading dimension ld) rounded to fp16 into a tight `out`: as fp32
// values (kernels::round_to_fp16) or as fp16 bits (kernels::to_fp16).
template <class Out>
void round_matrix(std::vector<Out>& out, const float* x, int64_t rows, int64_t cols, int64_t ld,
                  void (*round)(Out*, const float*, int64_t)) {
    out.resize(static_cast<size_t>(rows * cols));
    if (ld == cols) {
        round(out.data(), x, rows * cols);
        return;
    }
    for (int64_t r = 0; r < rows; r++) round(out.data() + r * cols, x + r * ld, cols);
}

}  // namespace

void Fp16InputGemm::run(const backend::GemmShape& s, const float* a, const float* b, float* c, const float* bias) {
    backend::GemmShape tight = s;
    tight.lda = s.trans_a ? s.M : s.K;
    tight.ldb = s.trans_b ? s.K : s.N;
    const int64_t a_rows = s.trans_a ? s.K : s.M, b_rows = s.trans_b ? s.N : s.K;
    if (inner_->native_f16()) {
        round_matrix(a_half_, a, a_rows, tight.lda, s.stored_lda(), kernels::to_fp16);
        round_matrix(b_half_, b, b_rows, tight.ldb, s.stored_ldb(), kernels::to_fp16);
        inner_->run_f16(tight, a_half_.data(), b_half_.data(), c, bias);
        return;
    }
    round_matrix(a_, a, a_rows, tight.lda, s.stored_lda(), kernels::round_to_fp16);
    round_matrix(b_, b, b_rows, tight.ldb, s.stored_ldb(), kernels::round_to_fp16);
    inner_->run(tight, a_.data(), b_.data(), c, bias);
}

}  // namespace lmforge
