// io/tar_gz: ustar entries and pax long names read back; a damaged archive is an InputError
// naming it, never an internal error.
#include "io/tar_gz.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "test_util.h"

namespace lmforge {
namespace {

// A 512-byte ustar header for an entry of `size` bytes, its checksum set.
std::string header(const std::string& name, char type, size_t size) {
    std::string h(512, '\0');
    std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
    std::snprintf(h.data() + 124, 12, "%011zo", size);
    h[156] = type;
    std::memcpy(h.data() + 257, "ustar\00000", 8);
    std::memset(h.data() + 148, ' ', 8);
    unsigned sum = 0;
    for (const char c : h) sum += static_cast<unsigned char>(c);
    std::snprintf(h.data() + 148, 8, "%06o", sum);
    return h;
}

// An entry: its header and its body padded to whole blocks.
std::string entry(const std::string& name, char type, const std::string& body) {
    return header(name, type, body.size()) + body + std::string((512 - body.size() % 512) % 512, '\0');
}

std::vector<std::byte> gzip(const std::string& data) {
    z_stream z{};
    EXPECT_EQ(deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    std::vector<std::byte> out(deflateBound(&z, data.size()) + 64);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

TEST(TarGz, ReadsEntriesAndPaxLongNames) {
    const std::string long_name = "package/" + std::string(120, 'd') + "/data.txt";
    const std::string record = " path=" + long_name + "\n";
    const std::string pax = std::to_string(record.size() + 3) + record;  // the length counts its 3 digits
    const auto entries = read_tar_gz(gzip(entry("package/a.txt", '0', "hello") + entry("PaxHeader", 'x', pax) +
                                          entry("short", '0', "x") + std::string(1024, '\0')),
                                     "t.tar.gz");
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].path, "package/a.txt");
    EXPECT_EQ(entries[0].data.size(), 5u);
    EXPECT_EQ(entries[1].path, long_name);
}

// A pax record's length that is no number once escaped std::stoul's invalid_argument as an
// internal error; one too short for its own "<length> " or past the header's end is as
// damaged. (Found by fuzz/tar_gz_fuzz.cpp.)
TEST(TarGz, DamagedPaxRecordsAreRefused) {
    for (const std::string pax : {"q46 path=x\n", "99999999999999999999999 path=x\n", "2 path=x\n", "90 path=x\n"}) {
        const auto archive = gzip(entry("PaxHeader", 'x', pax) + entry("a", '0', "x") + std::string(1024, '\0'));
        EXPECT_NE(test::input_error_of([&] { read_tar_gz(archive, "t.tar.gz"); })
                      .find("t.tar.gz: damaged pax header at byte 0"),
                  std::string::npos)
            << pax;
    }
}

}  // namespace
}  // namespace lmforge
