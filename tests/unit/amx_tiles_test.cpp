// backend/amx_tiles.h: pair products on 16 x 16 tiles, emulated on every CPU against sums in
// double, and on AMX against the emulation where the CPU has it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "backend/amx_tiles.h"
#include "core/bf16.h"
#include "test_util.h"

namespace lmforge::test {
namespace {

// Operands wider than the product (a_ld, b_ld and ldc past m, n and npairs), so that a read or
// a write out of place shows.
struct Operands {
    int64_t m, n, npairs, a_ld, b_ld, ldc;
    std::vector<uint16_t> a, b;
    std::vector<float> c;

    Operands(int64_t m_, int64_t n_, int64_t npairs_)
        : m(m_), n(n_), npairs(npairs_), a_ld(npairs_ + 5), b_ld(n_ + 16), ldc(n_ + 3) {
        for (const float x : random_vector(m * a_ld * 2, 1, 2.0f)) a.push_back(to_bf16(x));
        for (const float x : random_vector(npairs * b_ld * 2, 2, 2.0f)) b.push_back(to_bf16(x));
        c = random_vector(m * ldc, 3);
    }
    backend::TilePairProduct product(float alpha, bool accumulate) {
        return {.m = m, .n = n, .npairs = npairs, .alpha = alpha, .a = a.data(), .a_ld = a_ld,
                .b = b.data(), .b_ld = b_ld, .accumulate = accumulate, .c = c.data(), .ldc = ldc};
    }
    // What c becomes, in double, from c as it is now.
    std::vector<double> expected(float alpha, bool accumulate) const {
        std::vector<double> want(c.begin(), c.end());
        for (int64_t r = 0; r < m; r++) {
            for (int64_t j = 0; j < n; j++) {
                double sum = 0;
                for (int64_t p = 0; p < npairs; p++) {
                    for (int64_t h = 0; h < 2; h++) sum += from_bf16(a[2 * (r * a_ld + p) + h]) * from_bf16(b[2 * (p * b_ld + j) + h]);
                }
                want[r * ldc + j] = alpha * sum + (accumulate ? c[r * ldc + j] : 0.0);
            }
        }
        return want;
    }
};

// alpha 1 takes the path that starts the tile from C and stores it in place; 0.5 the one that
// writes a block from the tile.
TEST(AmxTiles, EmulatedProductIsTheSumOfThePairs) {
    for (const auto& [m, n, npairs] : {std::tuple{16, 16, 16}, {32, 48, 16}, {48, 16, 64}}) {
        for (const float alpha : {1.0f, 0.5f}) {
            for (const bool accumulate : {false, true}) {
                Operands ops(m, n, npairs);
                const auto want = ops.expected(alpha, accumulate);
                backend::tile_pair_product(ops.product(alpha, accumulate), backend::TileUnit::Emulated);
                for (size_t i = 0; i < want.size(); i++) {
                    ASSERT_NEAR(ops.c[i], want[i], 1e-4 * (1 + std::abs(want[i])))
                        << "m=" << m << " n=" << n << " pairs=" << npairs << " alpha=" << alpha
                        << " accumulate=" << accumulate << " at " << i;
                }
            }
        }
    }
}

TEST(AmxTiles, WritesTheProductTransposedWhenAsked) {
    Operands ops(32, 48, 16);
    const auto sums = ops.expected(1.0f, false);  // at r · ops.ldc + n
    constexpr int64_t ldt = 32 + 7;               // Cᵀ's rows: 48 of 32, 7 apart past them
    std::vector<float> transposed = random_vector(48 * ldt, 4);
    const std::vector<float> before = transposed;
    auto p = ops.product(2.0f, true);
    p.c = transposed.data();
    p.ldc = ldt;
    p.c_transposed = true;
    backend::tile_pair_product(p, backend::TileUnit::Emulated);
    for (int64_t n = 0; n < 48; n++) {
        for (int64_t r = 0; r < ldt; r++) {
            const double want = r < 32 ? 2.0 * sums[r * ops.ldc + n] + before[n * ldt + r] : before[n * ldt + r];
            ASSERT_NEAR(transposed[n * ldt + r], want, 1e-4 * (1 + std::abs(want))) << r << ", " << n;
        }
    }
}

TEST(AmxTiles, RefusesAProductOfPartTiles) {
    Operands ops(16, 16, 16);
    auto p = ops.product(1.0f, false);
    p.n = 17;
    EXPECT_THROW(backend::tile_pair_product(p, backend::TileUnit::Emulated), std::logic_error);
}

// Every way of writing C: in place (alpha 1) or through a block (AVX-512 on AMX, scalar in the
// emulation), added or not, transposed or not.
TEST(AmxTiles, AmxMatchesTheEmulation) {
    if (!backend::bf16_tiles_usable()) GTEST_SKIP() << "no AMX on this CPU (or Linux refused the tile state)";
    for (const float alpha : {1.0f, 0.25f}) {
        for (const bool accumulate : {false, true}) {
            for (const bool transposed : {false, true}) {
                Operands on_tiles(48, 32, 48);
                Operands emulated = on_tiles;
                auto p = on_tiles.product(alpha, accumulate), q = emulated.product(alpha, accumulate);
                if (transposed) {  // Cᵀ's 32 rows of 48, 51 apart, fit in C's 48 x 35
                    p.ldc = q.ldc = 51;
                    p.c_transposed = q.c_transposed = true;
                }
                backend::tile_pair_product(p, backend::TileUnit::Amx);
                backend::tile_pair_product(q, backend::TileUnit::Emulated);
                for (size_t i = 0; i < emulated.c.size(); i++) {
                    ASSERT_NEAR(on_tiles.c[i], emulated.c[i], 1e-5 * (1 + std::abs(emulated.c[i])))
                        << "alpha=" << alpha << " accumulate=" << accumulate << " transposed=" << transposed
                        << " at " << i;
                }
            }
        }
    }
    EXPECT_EQ(backend::tile_unit(), std::optional(backend::TileUnit::Amx));
}

TEST(AmxTiles, NoUnitWithoutAmxUnlessATestAsks) {
    if (!backend::bf16_tiles_usable()) {
        EXPECT_EQ(backend::tile_unit(), std::nullopt);
    }
    backend::use_tile_unit(backend::TileUnit::Emulated);
    EXPECT_EQ(backend::tile_unit(), std::optional(backend::TileUnit::Emulated));
    backend::use_tile_unit(std::nullopt);
    EXPECT_EQ(backend::tile_unit(), std::nullopt);
    backend::use_detected_tile_unit();
    if (!backend::bf16_tiles_usable()) {
        EXPECT_EQ(backend::tile_unit(), std::nullopt);
    }
}

}  // namespace
}  // namespace lmforge::test
