// Writing PNG images (8-bit RGB, no interlacing), compressed with zlib.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmforge {

// rgb: height rows of width pixels, 3 bytes each. Written atomically.
void write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb);

}  // namespace lmforge
