#include "model/fp16_gemm.h"

#include "kernels/fp16.h"

namespace lmforge {

namespace {

// X's stored rows × cols (leading dimension ld) rounded to fp16 into a tight `out`.
void round_matrix(std::vector<float>& out, const float* x, int64_t rows, int64_t cols, int64_t ld) {
    out.resize(static_cast<size_t>(rows * cols));
    if (ld == cols) {
        kernels::round_to_fp16(out.data(), x, rows * cols);
        return;
    }
    for (int64_t r = 0; r < rows; r++) kernels::round_to_fp16(out.data() + r * cols, x + r * ld, cols);
}

// The same as fp16 bits, for a GEMM that multiplies fp16 itself.
void half_matrix(std::vector<uint16_t>& out, const float* x, int64_t rows, int64_t cols, int64_t ld) {
    out.resize(static_cast<size_t>(rows * cols));
    if (ld == cols) {
        kernels::to_fp16(out.data(), x, rows * cols);
        return;
    }
    for (int64_t r = 0; r < rows; r++) kernels::to_fp16(out.data() + r * cols, x + r * ld, cols);
}

}  // namespace

void Fp16InputGemm::run(const backend::GemmShape& s, const float* a, const float* b, float* c, const float* bias) {
    backend::GemmShape tight = s;
    tight.lda = s.trans_a ? s.M : s.K;
    tight.ldb = s.trans_b ? s.K : s.N;
    const int64_t a_rows = s.trans_a ? s.K : s.M, b_rows = s.trans_b ? s.N : s.K;
    if (inner_->native_f16()) {
        half_matrix(a_half_, a, a_rows, tight.lda, s.stored_lda());
        half_matrix(b_half_, b, b_rows, tight.ldb, s.stored_ldb());
        inner_->run_f16(tight, a_half_.data(), b_half_.data(), c, bias);
        return;
    }
    round_matrix(a_, a, a_rows, tight.lda, s.stored_lda());
    round_matrix(b_, b, b_rows, tight.ldb, s.stored_ldb());
    inner_->run(tight, a_.data(), b_.data(), c, bias);
}

}  // namespace lmforge
