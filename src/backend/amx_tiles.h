// bf16 products on AMX's matrix tiles, and an emulation of the tile instructions they use.
//
// A tile holds 16 rows of 64 bytes. tdpbf16ps adds to a 16 x 16 fp32 tile the products of a
// tile of 16 rows of 16 bf16 pairs (A) and a tile of 16 rows of pairs by 16 columns (B): each
// fp32 element adds a0·b0 + a1·b1 for each of its 16 pairs, as vdpbf16ps does lane by lane.
// So the operands are laid out as kernels/attention_bf16.cpp lays out its pair products.
//
// The emulation runs the same code on any CPU, instruction for instruction (it refuses shapes
// the hardware would fault on), so the logic around the tiles is tested where there are none.
// Where the CPU has them, tile_unit() takes AMX only after the two agree on a product.
#pragma once

#include <cstdint>
#include <optional>

namespace lmforge::backend {

// Whether this process may multiply on AMX tiles: the CPU has AMX-TILE, AMX-BF16 and AVX-512F
// (for the blocks the tiles are written through), and Linux grants the tile state's
// permission (arch_prctl ARCH_REQ_XCOMP_PERM, asked once here).
bool bf16_tiles_usable();

// AMX's tile configuration (palette 1): each tile's rows and bytes per row.
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t bytes_per_row[16] = {};
    uint8_t rows[16] = {};

    // Every one of the 8 tiles 16 rows of 64 bytes.
    static TileConfig full();
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

// ldtilecfg on the calling thread, where bf16_tiles_usable(). Every configuration is loaded
// through this, never _tile_loadconfig (amx_tiles.cpp says why).
void load_tile_config(const TileConfig& config);

enum class TileUnit { Amx, Emulated };

// C (m x n, fp32, ldc apart) = alpha · Σ_p A(r, p)·B(p, n), added to C when accumulate. m, n and
// npairs are multiples of 16. A's row r holds its pairs side by side, a_ld pairs after row r - 1;
// B's pair (p, n) lies at b + 2·(p·b_ld + n). With c_transposed, element (r, n) is C's at
// c + n·ldc + r: the product is Cᵀ.
struct TilePairProduct {
    int64_t m = 0, n = 0, npairs = 0;
    float alpha = 1.0f;
    const uint16_t* a = nullptr;
    int64_t a_ld = 0;
    const uint16_t* b = nullptr;
    int64_t b_ld = 0;
    bool accumulate = false;
    float* c = nullptr;
    int64_t ldc = 0;
    bool c_transposed = false;
};

// On the calling thread; configures the thread's tiles and releases them at the end, so it
// may run between other code's tile work (oneDNN's).
void tile_pair_product(const TilePairProduct& p, TileUnit unit);

// The unit pair products run on: AMX where bf16_tiles_usable() and a first product on it agreed
// with the emulation's (a warning, and none, where they did not); none elsewhere. A test may
// force one (use_tile_unit), or none, on any CPU.
std::optional<TileUnit> tile_unit();
void use_tile_unit(std::optional<TileUnit> unit);
void use_detected_tile_unit();

}  // namespace lmforge::backend
