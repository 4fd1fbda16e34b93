// A GEMM for small tiles that a kernel multiplies inside its own parallel region (attention's
// per-head blocks): it runs on the calling thread, so each thread works on its own tiles.
// Row-major, as the Gemm interface: C (M, N) = alpha · op(A) · op(B) + beta · C.
#pragma once

#include <cstdint>

namespace lmforge::backend {

struct TileOp {
    bool trans = false;
    int64_t ld = 0;  // elements between stored rows
};

void tile_gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* a, TileOp op_a, const float* b,
               TileOp op_b, float beta, float* c, int64_t ldc);

}  // namespace lmforge::backend
