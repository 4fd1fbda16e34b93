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

}  // namespace

void Fp16InputGemm::run(const backend::GemmShape& s, const float* a, const float* b, float* c, const float* bias) {
    backend::GemmShape tight = s;
    tight.lda = s.trans_a ? s.M : s.K;
    tight.ldb = s.trans_b ? s.K : s.N;
    round_matrix(a_, a, s.trans_a ? s.K : s.M, tight.lda, s.stored_lda());
    round_matrix(b_, b, s.trans_b ? s.N : s.K, tight.ldb, s.stored_ldb());
    inner_->run(tight, a_.data(), b_.data(), c, bias);
}

}  // namespace lmforge
