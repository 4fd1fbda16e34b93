// The .tar.gz reader (io/tar_gz.h) that unpacks downloaded datasets. Random bytes are seldom a
// gzip stream, so an input whose first byte is odd is a tar archive that the harness gzips
// first (to reach the tar parser), after setting the checksum of each block that carries
// ustar's magic (else nearly every change to a header would only fail its checksum); one whose
// first byte is even is the .tar.gz itself (to reach gunzip). Every entry read must lie inside
// the archive.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "io/tar_gz.h"

using namespace lmforge;

namespace {

// Sets the checksum field of every 512-byte block that holds "ustar" at offset 257: the sum of
// its bytes with the field itself counted as spaces, in octal.
std::vector<uint8_t> with_checksums(const uint8_t* data, size_t size) {
    std::vector<uint8_t> tar(data, data + size);
    for (size_t at = 0; at + 512 <= tar.size(); at += 512) {
        uint8_t* h = tar.data() + at;
        if (std::memcmp(h + 257, "ustar", 5) != 0) continue;
        std::memset(h + 148, ' ', 8);
        unsigned sum = 0;
        for (size_t i = 0; i < 512; i++) sum += h[i];
        std::snprintf(reinterpret_cast<char*>(h + 148), 8, "%06o", sum);
    }
    return tar;
}

std::vector<std::byte> gzip(const uint8_t* data, size_t size) {
    z_stream z{};
    fuzz::check(deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
    std::vector<std::byte> out(deflateBound(&z, size) + 64);
    z.next_in = const_cast<Bytef*>(data);
    z.avail_in = static_cast<uInt>(size);
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    fuzz::check(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::vector<uint8_t> tar = data[0] % 2 == 1 ? with_checksums(data + 1, size - 1) : std::vector<uint8_t>();
    const std::vector<std::byte> archive =
        data[0] % 2 == 1 ? gzip(tar.data(), tar.size())
                         : std::vector<std::byte>(reinterpret_cast<const std::byte*>(data + 1),
                                                  reinterpret_cast<const std::byte*>(data + size));
    fuzz::accepts([&] {
        size_t bytes = 0;
        for (const TarEntry& e : read_tar_gz(archive, "fuzz.tar.gz")) bytes += e.data.size();
        fuzz::check(data[0] % 2 == 0 || bytes <= size, "tar entries hold more bytes than the archive");
    });
    return 0;
}
