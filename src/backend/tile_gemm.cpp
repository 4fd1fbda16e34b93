#include "backend/tile_gemm.h"

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <mutex>
#include <optional>

#include "backend/jit_room.h"
#include "core/error.h"

namespace lmforge::backend {

namespace {

struct Failure {
    int64_t M, N, K;
    dnnl_status_t status;
};

// The first failure since the last check, kept without allocating: memory may be what ran out.
std::mutex failure_mutex;
std::optional<Failure> first_failure;

[[noreturn]] void sgemm_failed(const std::string& what, dnnl_status_t status) {
    throw Error(fmt::format("oneDNN sgemm failed {}: {}", what, dnnl_status2str(status)),
                status == dnnl_out_of_memory ? kOutOfMemoryHint : kOnednnRefusedHint);
}

void warm_up_sgemm() {
    if (!has_jit_room()) {
        throw Error(fmt::format("oneDNN could not generate its sgemm kernels: out of memory (less than {} MiB of "
                                "address space left for them)",
                                kJitRoomBytes >> 20),
                    kOutOfMemoryHint);
    }
    float a[4] = {}, c[4] = {};
    const dnnl_status_t status = dnnl_sgemm('N', 'N', 2, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2);
    if (status != dnnl_success) sgemm_failed("generating its kernels", status);
}

}  // namespace

// oneDNN's sgemm sizes its thread team to 1 when it is called inside a parallel region, so
// this is the single-threaded JIT kernel: ≈200 GFLOP/s on 2 threads for 128×256×64 tiles
// here, where a hand-written loop over rows reached ≈55.
void tile_gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* a, TileOp op_a, const float* b,
               TileOp op_b, float beta, float* c, int64_t ldc) {
    if (M == 0 || N == 0) return;
    const dnnl_status_t status = dnnl_sgemm(op_a.trans ? 'T' : 'N', op_b.trans ? 'T' : 'N', M, N, K, alpha, a,
                                            op_a.ld, b, op_b.ld, beta, c, ldc);
    if (status == dnnl_success) return;
    const std::lock_guard lock(failure_mutex);
    if (!first_failure) first_failure = Failure{M, N, K, status};
}

void prepare_tile_gemm() {
    // A static's initialisation is tried again after it threw: until it once succeeds.
    static const bool ready = (warm_up_sgemm(), true);
    (void)ready;
}

void check_tile_gemms() {
    std::optional<Failure> f;
    {
        const std::lock_guard lock(failure_mutex);
        f.swap(first_failure);
    }
    if (f) sgemm_failed(fmt::format("on a tile of M={} N={} K={}", f->M, f->N, f->K), f->status);
}

}  // namespace lmforge::backend
