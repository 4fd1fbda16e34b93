// A GEMM for small tiles that a kernel multiplies inside its own parallel region (attention's
// per-head blocks): it runs on the calling thread, so each thread works on its own tiles.
// Row-major, as the Gemm interface: C (M, N) = alpha · op(A) · op(B) + beta · C.
//
// Inside a parallel region an exception ends the process (std::terminate), so tile_gemm does
// not throw: it keeps the first failure, and the kernel calls check_tile_gemms() after the
// region. oneDNN generates sgemm's kernels on its first call, which must not fail there
// either: prepare_tile_gemm() makes that call, outside any region.
#pragma once

#include <cstdint>

namespace lmforge::backend {

struct TileOp {
    bool trans = false;
    int64_t ld = 0;  // elements between stored rows
};

void tile_gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* a, TileOp op_a, const float* b,
               TileOp op_b, float beta, float* c, int64_t ldc);

// Before the first tile_gemm, outside parallel regions; cheap after the first call. Error if
// oneDNN cannot generate sgemm's kernels (out of memory).
void prepare_tile_gemm();

// After a parallel region of tile_gemms: Error for the first that failed since the last check.
void check_tile_gemms();

}  // namespace lmforge::backend
