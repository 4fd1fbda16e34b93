// backend/: oneDNN's GEMM against the naive one for every transposition, accumulation, bias
// and padded leading dimensions; oneDNN's failures (no memory for its kernels, bad arguments)
// as lmforge's errors.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "backend/amx_tiles.h"
#include "backend/gemm.h"
#include "backend/gemm_onednn.h"
#include "backend/peak.h"
#include "backend/tile_gemm.h"
#include "core/fp16.h"
#include "kernels/bf16.h"
#include "model/precision.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include "test_util.h"

namespace lmforge::test {
namespace {

TEST(Gemm, OnednnMatchesNaiveForEveryLayout) {
    auto fast = backend::make_gemm(backend::GemmKind::Onednn);
    auto slow = backend::make_gemm(backend::GemmKind::Naive);
    for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
            for (const bool acc : {false, true}) {
                for (const bool with_bias : {false, true}) {
                    const int64_t M = 19, N = 37, K = 29, pad = 3;
                    backend::GemmShape s{.M = M, .N = N, .K = K, .trans_a = ta, .trans_b = tb,
                                         .lda = (ta ? M : K) + pad, .ldb = (tb ? K : N) + pad,
                                         .ldc = N + pad, .accumulate = acc};
                    const auto a = random_vector((ta ? K : M) * s.lda, 1);
                    const auto b = random_vector((tb ? N : K) * s.ldb, 2);
                    const auto bias = random_vector(N, 3);
                    auto c1 = random_vector(M * s.ldc, 4);
                    auto c2 = c1;
                    fast->run(s, a.data(), b.data(), c1.data(), with_bias ? bias.data() : nullptr);
                    slow->run(s, a.data(), b.data(), c2.data(), with_bias ? bias.data() : nullptr);
                    EXPECT_TRUE(close(c1, c2, 1e-5, 1e-5))
                        << "ta=" << ta << " tb=" << tb << " acc=" << acc << " bias=" << with_bias;
                }
            }
        }
    }
}

TEST(Gemm, BWithCollidingRowsIsCopiedAndTheProductUnchanged) {
    // Few rows and B's rows 512 floats apart (or a multiple): the backend multiplies a copy of B
    // at another stride (gemm_onednn.cpp). Forced on any CPU here; fp32 and widened bf16, a tight
    // and a padded B, bias and accumulation; and a transposed B, which is never copied.
    backend::OnednnGemm fp32({.restride_on_any_isa = true});
    backend::OnednnGemm widened({.widen_bf16 = true, .restride_on_any_isa = true});
    auto slow = backend::make_gemm(backend::GemmKind::Naive);
    for (const int64_t N : {512, 500}) {
        for (const bool tb : {false, true}) {
            const int64_t M = 32, K = 24, ldb = tb || N == 512 ? 512 : 1024;
            const backend::GemmShape s{.M = M, .N = N, .K = K, .trans_b = tb, .ldb = ldb, .accumulate = true};
            EXPECT_EQ(fp32.as_executed(s).ldb, tb ? ldb : ldb + 16) << "N=" << N << " tb=" << tb;
            const auto a = random_vector(M * K, 1), b = random_vector((tb ? N : K) * ldb, 2);
            const auto bias = random_vector(N, 3);
            auto c1 = random_vector(M * N, 4);
            auto c2 = c1;
            fp32.run(s, a.data(), b.data(), c1.data(), bias.data());
            slow->run(s, a.data(), b.data(), c2.data(), bias.data());
            EXPECT_TRUE(close(c1, c2, 1e-5, 1e-5)) << "N=" << N << " tb=" << tb;

            std::vector<uint16_t> ah(a.size()), bh(b.size());
            for (size_t i = 0; i < a.size(); i++) ah[i] = to_bf16(a[i]);
            for (size_t i = 0; i < b.size(); i++) bh[i] = to_bf16(b[i]);
            auto h1 = random_vector(M * N, 5);
            auto h2 = h1;
            widened.run_bf16(s, ah.data(), bh.data(), h1.data(), bias.data());
            slow->run_bf16(s, ah.data(), bh.data(), h2.data(), bias.data());
            EXPECT_TRUE(close(h1, h2, 1e-5, 1e-4)) << "bf16 N=" << N << " tb=" << tb;
        }
    }
}

TEST(Gemm, OnlyFewRowsAndAModestBAreCopied) {
    backend::OnednnGemm gemm({.restride_on_any_isa = true});
    const auto executed_ldb = [&](int64_t M, int64_t N, int64_t K) {
        return gemm.as_executed({.M = M, .N = N, .K = K}).ldb;
    };
    EXPECT_EQ(executed_ldb(256, 3072, 768), 3072 + 16);  // GPT-2 124M's c_fc at config A's rows
    EXPECT_EQ(executed_ldb(8, 3072, 768), 0);             // too few rows to pay for the copy
    EXPECT_EQ(executed_ldb(4096, 3072, 768), 0);          // oneDNN packs B itself
    EXPECT_EQ(executed_ldb(256, 2304, 768), 0);           // rows 2304 floats apart do not collide
    EXPECT_EQ(executed_ldb(256, 1024, 50257), 0);         // a 1024-wide token table: too big a copy
}

// The address space this process has mapped (VmSize), in bytes.
rlim_t mapped_bytes() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmSize:", 0) == 0) return static_cast<rlim_t>(std::stoll(line.substr(7))) * 1024;
    }
    return RLIM_INFINITY;
}

// ulimit -v for a scope: the process may map only `room` bytes more than it has.
class AddressSpaceLimit {
public:
    explicit AddressSpaceLimit(rlim_t room) {
        getrlimit(RLIMIT_AS, &saved_);
        rlimit lowered = saved_;
        lowered.rlim_cur = mapped_bytes() + room;
        setrlimit(RLIMIT_AS, &lowered);
    }
    ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }

private:
    rlimit saved_{};
};

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

// A GEMM of a new shape makes oneDNN generate its kernels. Where it could not map a buffer for
// them (ulimit -v), it wrote them through a null pointer: SIGSEGV in dnnl_primitive_create.
// lmforge checks for the room first: an Error naming the shape, and the GEMM runs once there
// is room again. (Sanitizers map shadow memory of their own: no limit can be set for them.)
TEST(Gemm, OnednnWithoutRoomForItsKernelsIsAnErrorNamingTheShape) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer's allocator needs address space of its own";
#endif
    backend::OnednnGemm gemm;
    auto slow = backend::make_gemm(backend::GemmKind::Naive);
    const auto a = random_vector(96 * 72, 1), b = random_vector(72 * 80, 2);
    std::vector<float> c(96 * 80), want(96 * 80);
    gemm.run({.M = 8, .N = 8, .K = 8}, a.data(), b.data(), c.data(), nullptr);  // oneDNN started
#pragma omp parallel
    c[0] = 0.0f;  // and OpenMP's threads
    const backend::GemmShape s{.M = 96, .N = 80, .K = 72};
    std::vector<uint16_t> a16(a.size()), b16(b.size());
    std::string fp32, bf16;
    {
        const AddressSpaceLimit limit(rlim_t{1} << 20);
        fp32 = error_of([&] { gemm.run(s, a.data(), b.data(), c.data(), nullptr); });
        bf16 = error_of([&] { gemm.run_bf16(s, a16.data(), b16.data(), c.data(), nullptr); });
    }
    EXPECT_NE(fp32.find("oneDNN could not create a matmul primitive for M=96 N=80 K=72"), std::string::npos) << fp32;
    EXPECT_NE(bf16.find("oneDNN could not create a matmul primitive for M=96 N=80 K=72"), std::string::npos) << bf16;
    gemm.run(s, a.data(), b.data(), c.data(), nullptr);
    slow->run(s, a.data(), b.data(), want.data());
    EXPECT_TRUE(close(c, want, 1e-5, 1e-4));
}

// tile_gemm runs inside kernels' parallel regions, where an exception ends the process
// (std::terminate, SIGABRT): a failure is kept, and check_tile_gemms() throws it after the region.
TEST(TileGemm, AFailureInsideAParallelRegionIsThrownAfterIt) {
    std::vector<float> a(64, 1.0f), c(64);
#pragma omp parallel
    backend::tile_gemm(8, 8, 8, 1.0f, a.data(), {false, 0}, a.data(), {false, 8}, 0.0f, c.data(), 8);  // lda 0 < K
    const std::string error = error_of([] { backend::check_tile_gemms(); });
    EXPECT_NE(error.find("oneDNN sgemm failed on a tile of M=8 N=8 K=8"), std::string::npos) << error;
    EXPECT_EQ(error_of([] { backend::check_tile_gemms(); }), "no error");  // thrown once
    backend::tile_gemm(8, 8, 8, 1.0f, a.data(), {false, 8}, a.data(), {false, 8}, 0.0f, c.data(), 8);
    EXPECT_EQ(error_of([] { backend::check_tile_gemms(); }), "no error");
    EXPECT_EQ(c[0], 8.0f);
}

// A oneDNN on TBB or SYCL threads (PyPI's onednn-devel: SYCL) is starved by lmforge's spinning
// OpenMP threads; one on OpenMP's, or on the calling thread, is not.
TEST(Gemm, WarnsOfSpinningThreadsOnlyBesideAnotherThreadRuntime) {
    EXPECT_EQ(backend::onednn_thread_warning(DNNL_RUNTIME_OMP, nullptr), "");
    EXPECT_EQ(backend::onednn_thread_warning(DNNL_RUNTIME_SEQ, nullptr), "");
    EXPECT_EQ(backend::onednn_thread_warning(DNNL_RUNTIME_THREADPOOL, nullptr), "");
    EXPECT_EQ(backend::onednn_thread_warning(DNNL_RUNTIME_TBB, "passive"), "");
    EXPECT_EQ(backend::onednn_thread_warning(DNNL_RUNTIME_SYCL, "active"), "");  // the user chose
    for (const auto& [runtime, name] : {std::pair{DNNL_RUNTIME_TBB, "TBB"}, std::pair{DNNL_RUNTIME_SYCL, "SYCL"}}) {
        const std::string w = backend::onednn_thread_warning(runtime, nullptr);
        EXPECT_NE(w.find(fmt::format("on {} threads", name)), std::string::npos) << w;
        EXPECT_NE(w.find("set OMP_WAIT_POLICY=passive"), std::string::npos) << w;
        EXPECT_EQ(backend::onednn_thread_warning(runtime, ""), w);  // an empty value is no setting
    }
}

TEST(Gemm, EmptyInnerDimensionLeavesBiasOrAccumulator) {
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    std::vector<float> c = {1.0f, 2.0f}, bias = {10.0f, 20.0f};
    gemm->run({.M = 1, .N = 2, .K = 0, .accumulate = true}, nullptr, nullptr, c.data(), bias.data());
    EXPECT_EQ(c, (std::vector<float>{11.0f, 22.0f}));
}

}  // namespace
}  // namespace lmforge::test

namespace lmforge::test {
namespace {

TEST(GemmBf16, OnednnMatchesNaiveOnTheSameBf16Inputs) {
    // Both backends see identical bf16 operands and accumulate in at least fp32: they agree to
    // fp32 rounding, whatever bf16 lost when the inputs were rounded. oneDNN runs all its
    // paths: native bf16 where the CPU has it, on the kernels lmforge picks and on oneDNN's
    // first choice, and operands widened to fp32 (any CPU), with tight and padded leading
    // dimensions (the widened copies must keep the strides). lmforge's pick differs from the
    // first choice for the larger shape with B plain, tight and without a bias.
    backend::OnednnGemm native_or_widened, first_choice({.first_choice_kernels = true}), widened({.widen_bf16 = true});
    auto slow = backend::make_gemm(backend::GemmKind::Naive);
    for (backend::Gemm* fast : {static_cast<backend::Gemm*>(&native_or_widened),
                                static_cast<backend::Gemm*>(&first_choice), static_cast<backend::Gemm*>(&widened)}) {
        for (const bool ta : {false, true}) {
            for (const bool tb : {false, true}) {
                for (const int64_t M : {23, 259}) {
                    for (const int64_t pad : {0, 3}) {
                        for (const bool with_bias : {false, true}) {
                            const int64_t N = M + 12, K = M + 106;
                            const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad;
                            const backend::GemmShape s{.M = M, .N = N, .K = K, .trans_a = ta, .trans_b = tb,
                                                       .lda = lda, .ldb = ldb, .accumulate = true};
                            std::vector<uint16_t> a((ta ? K : M) * lda), b((tb ? N : K) * ldb);
                            const auto fa = random_vector(a.size(), 1), fb = random_vector(b.size(), 2);
                            for (size_t i = 0; i < a.size(); i++) a[i] = to_bf16(fa[i]);
                            for (size_t i = 0; i < b.size(); i++) b[i] = to_bf16(fb[i]);
                            const auto bias = random_vector(N, 3);
                            const float* bias_or_null = with_bias ? bias.data() : nullptr;
                            auto c1 = random_vector(M * N, 4);
                            auto c2 = c1;
                            fast->run_bf16(s, a.data(), b.data(), c1.data(), bias_or_null);
                            slow->run_bf16(s, a.data(), b.data(), c2.data(), bias_or_null);
                            EXPECT_TRUE(close(c1, c2, 1e-5, 1e-4))
                                << "M=" << M << " ta=" << ta << " tb=" << tb << " pad=" << pad << " bias=" << with_bias
                                << " first choice=" << (fast == &first_choice) << " widened=" << (fast == &widened);
                        }
                    }
                }
            }
        }
    }
}

TEST(GemmBf16, Bf16OutputIsTheFp32SumRoundedOnce) {
    // c in bf16: the fp32 sums (with the bias) of the two backends differ in their last bits, so
    // their roundings agree to one bf16 step at most; the padding between c's rows is left alone.
    backend::OnednnGemm native_or_widened, first_choice({.first_choice_kernels = true}), widened({.widen_bf16 = true});
    auto slow = backend::make_gemm(backend::GemmKind::Naive);
    for (backend::Gemm* fast : {static_cast<backend::Gemm*>(&native_or_widened),
                                static_cast<backend::Gemm*>(&first_choice), static_cast<backend::Gemm*>(&widened)}) {
        for (const bool tb : {false, true}) {
            const int64_t M = 37, N = 67, K = 129, ldc = N + 5;
            const backend::GemmShape s{.M = M, .N = N, .K = K, .trans_b = tb, .ldc = ldc};
            std::vector<uint16_t> a(M * K), b(K * N);
            const auto fa = random_vector(a.size(), 1), fb = random_vector(b.size(), 2);
            for (size_t i = 0; i < a.size(); i++) a[i] = to_bf16(fa[i]);
            for (size_t i = 0; i < b.size(); i++) b[i] = to_bf16(fb[i]);
            const auto bias = random_vector(N, 3);
            std::vector<uint16_t> c(M * ldc, 0x7FC1);  // a NaN where nothing may be written
            std::vector<float> want(M * N);
            fast->run_bf16(s, a.data(), b.data(), c.data(), bias.data());
            slow->run_bf16({.M = M, .N = N, .K = K, .trans_b = tb}, a.data(), b.data(), want.data(), bias.data());
            for (int64_t i = 0; i < M; i++) {
                for (int64_t j = 0; j < N; j++) {
                    const float w = want[i * N + j];
                    ASSERT_NEAR(from_bf16(c[i * ldc + j]), w, std::abs(w) * 0x1.0p-7f + 1e-6f)
                        << i << "," << j << " tb=" << tb << " widened=" << (fast == &widened);
                }
                for (int64_t j = N; j < ldc; j++) ASSERT_EQ(c[i * ldc + j], 0x7FC1) << "padding of row " << i;
            }
        }
    }
}

TEST(GemmBf16, APlainBRunsOnTheGemmKernelWhereBf16IsNativeWithoutTiles) {
    // gemm_onednn.cpp: a B not transposed with every dimension at least 256, no bias and an
    // fp32 output leaves oneDNN's first choice (brgemm) for its gemm-based kernel; a transposed
    // B, a small dimension or a bias keeps the first choice, as every product does on tiles.
    backend::OnednnGemm gemm, first_choice({.first_choice_kernels = true});
    if (!gemm.native_bf16() || gemm.bf16_on_tiles()) {
        GTEST_SKIP() << "this CPU has no native bf16 GEMM, or runs it on tiles: no choice is made";
    }
    const backend::GemmShape plain{.M = 256, .N = 384, .K = 512}, weight_grad{.M = 384, .N = 256, .K = 512, .trans_a = true};
    const backend::GemmShape forward{.M = 256, .N = 384, .K = 512, .trans_b = true};
    const backend::GemmShape rank16{.M = 512, .N = 384, .K = 16};  // a LoRA adapter's input gradient
    EXPECT_EQ(gemm.bf16_kernel(plain).rfind("gemm:", 0), 0u) << gemm.bf16_kernel(plain);
    EXPECT_EQ(gemm.bf16_kernel(weight_grad).rfind("gemm:", 0), 0u) << gemm.bf16_kernel(weight_grad);
    EXPECT_EQ(gemm.bf16_kernel(forward), first_choice.bf16_kernel(forward));
    EXPECT_EQ(gemm.bf16_kernel(rank16), first_choice.bf16_kernel(rank16));
    EXPECT_EQ(gemm.bf16_kernel(plain, true), first_choice.bf16_kernel(plain, true));  // with a bias
    EXPECT_NE(first_choice.bf16_kernel(plain).rfind("gemm:", 0), 0u) << first_choice.bf16_kernel(plain);
}

TEST(Bf16, RoundsToNearestEvenAndKeepsSpecials) {
    EXPECT_EQ(to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(from_bf16(to_bf16(1.0f + 0x1.0p-8f)), 1.0f);            // a tie rounds to even (down)
    EXPECT_EQ(from_bf16(to_bf16(1.0f + 0x1.8p-8f)), 1.0f + 0x1.0p-7f);  // above the tie: up
    EXPECT_EQ(from_bf16(to_bf16(1.0f + 0x1.0p-7f + 0x1.0p-8f)), 1.0f + 0x1.0p-6f);  // tie, odd: up
    EXPECT_EQ(from_bf16(to_bf16(-3.5f)), -3.5f);
    EXPECT_TRUE(std::isinf(from_bf16(to_bf16(std::numeric_limits<float>::infinity()))));
    EXPECT_TRUE(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
    std::vector<float> x = random_vector(1000, 5);
    std::vector<uint16_t> y(1000);
    kernels::to_bf16(y.data(), x.data(), 1000);
    for (size_t i = 0; i < x.size(); i++) {
        ASSERT_EQ(y[i], to_bf16(x[i]));
        ASSERT_NEAR(from_bf16(y[i]), x[i], std::abs(x[i]) * 0x1.0p-8f);  // half an ulp of 8 bits
    }
}

}  // namespace
}  // namespace lmforge::test

namespace lmforge {
namespace {

TEST(Peak, MeasuredOncePerKindAsAFiniteRate) {
    // Only what holds on any machine at any load: a positive, finite rate, and the same one
    // when asked again (measured once, then remembered, so logs and bench agree).
    for (const auto kind : {backend::PeakKind::Fp32Fma, backend::PeakKind::Bf16Dot, backend::PeakKind::Bf16Tile}) {
        const double first = backend::measured_peak_gflops(kind);
        EXPECT_TRUE(std::isfinite(first) && first > 0) << first;
        EXPECT_EQ(backend::measured_peak_gflops(kind), first);
    }
}

TEST(Peak, NamesTheInstructionItIsARateOf) {
    // The widest of the CPU's: bf16 dot products only where it has AVX512_BF16.
    __builtin_cpu_init();
    const std::string fma = __builtin_cpu_supports("avx512f") ? "fp32 FMA (AVX-512)"
                            : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "fp32 FMA (AVX2)"
                                                                                               : "fp32 scalar";
    EXPECT_EQ(backend::peak_unit(backend::PeakKind::Fp32Fma), fma);
    const std::string dot = __builtin_cpu_supports("avx512bf16") ? "vdpbf16ps (AVX512_BF16)" : fma;
    EXPECT_EQ(backend::peak_unit(backend::PeakKind::Bf16Dot), dot);
    // Tiles only where the CPU has AMX (and Linux lets the process use them).
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) {
        EXPECT_FALSE(backend::bf16_tiles_usable());
    }
    EXPECT_EQ(backend::peak_unit(backend::PeakKind::Bf16Tile),
              backend::bf16_tiles_usable() ? "tdpbf16ps (AMX-BF16)" : dot);
}

TEST(Peak, Bf16GemmsAreMeasuredAgainstTheUnitTheyRunOn) {
    // Divided by vdpbf16ps's rate, GEMMs on AMX tiles read 276-350% utilisation. fp32 and a CPU
    // without bf16 take the FMA rate; the tiles' rate is taken where oneDNN runs bf16 on them.
    EXPECT_EQ(std::string(peak_unit(Precision::Fp32)), backend::peak_unit(backend::PeakKind::Fp32Fma));
    const auto bf16_kind = !cpu_has_bf16()                    ? backend::PeakKind::Fp32Fma
                           : backend::onednn_bf16_on_tiles() ? backend::PeakKind::Bf16Tile
                                                              : backend::PeakKind::Bf16Dot;
    EXPECT_EQ(std::string(peak_unit(Precision::Bf16)), backend::peak_unit(bf16_kind));
    if (backend::onednn_bf16_on_tiles()) {
        EXPECT_TRUE(backend::bf16_tiles_usable());
    }
}

TEST(OnednnGemm, SaysTilesOnlyWhereTheCpuHasAmx) {
    // The LM head's choice of passes asks; AMX needs native bf16 GEMMs, and a CPU with it.
    __builtin_cpu_init();
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    if (!__builtin_cpu_supports("amx-bf16")) {
        EXPECT_FALSE(gemm->bf16_on_tiles());
    }
    if (gemm->bf16_on_tiles()) {
        EXPECT_TRUE(gemm->native_bf16());
    }
    EXPECT_FALSE(backend::make_gemm(backend::GemmKind::Naive)->bf16_on_tiles());
}

// fp16 operands of a product: 37 x 130 times (29 x 130)ᵀ, and their fp32 values.
struct F16Operands {
    static constexpr int64_t M = 37, N = 29, K = 130;
    backend::GemmShape shape{.M = M, .N = N, .K = K, .trans_b = true, .accumulate = true};
    std::vector<uint16_t> a = halves(test::random_vector(M * K, 5)), b = halves(test::random_vector(N * K, 6));

    static std::vector<uint16_t> halves(const std::vector<float>& x) {
        std::vector<uint16_t> h;
        for (const float v : x) h.push_back(to_f16(v));
        return h;
    }
    static std::vector<float> values(const std::vector<uint16_t>& h) {
        std::vector<float> v;
        for (const uint16_t x : h) v.push_back(from_f16(x));
        return v;
    }
};

TEST(GemmF16, RefusedByAGemmThatDoesNotMultiplyFp16) {
    F16Operands ops;
    std::vector<float> c(ops.M * ops.N);
    auto naive = backend::make_gemm(backend::GemmKind::Naive);
    EXPECT_FALSE(naive->native_f16());
    EXPECT_THROW(naive->run_f16(ops.shape, ops.a.data(), ops.b.data(), c.data()), std::logic_error);
    auto onednn = backend::make_gemm(backend::GemmKind::Onednn);
    if (!onednn->native_f16()) {
        EXPECT_THROW(onednn->run_f16(ops.shape, ops.a.data(), ops.b.data(), c.data()), std::logic_error);
    }
}

TEST(GemmF16, OnednnEqualsTheFp32GemmOnTheSameValues) {
    // But for the order of the fp32 sums. oneDNN multiplies fp16 on CPUs with AVX512_FP16 or
    // AMX-FP16, where it knows them.
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    if (!gemm->native_f16()) {
        GTEST_SKIP() << "oneDNN " << backend::onednn_version() << " has no fp16 matmul on this CPU";
    }
    F16Operands ops;
    auto got = test::random_vector(ops.M * ops.N, 7);
    auto want = got;
    gemm->run_f16(ops.shape, ops.a.data(), ops.b.data(), got.data());
    backend::make_gemm(backend::GemmKind::Naive)
        ->run(ops.shape, F16Operands::values(ops.a).data(), F16Operands::values(ops.b).data(), want.data());
    for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << i;
}

TEST(Peak, MeasuredAgainKeepsTheHigherFigure) {
    // A first measurement on busy cores reads low; measuring again may only raise what is
    // remembered, and what is asked for next is that figure.
    for (const auto kind : {backend::PeakKind::Fp32Fma, backend::PeakKind::Bf16Dot, backend::PeakKind::Bf16Tile}) {
        const double first = backend::measured_peak_gflops(kind);
        const double again = backend::remeasured_peak_gflops(kind);
        EXPECT_GE(again, first);
        EXPECT_EQ(backend::measured_peak_gflops(kind), again);
    }
}

}  // namespace
}  // namespace lmforge
