#include "io/tar_gz.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "core/error.h"

namespace lmforge {

namespace {

constexpr size_t kBlock = 512;

// A numeric header field: octal digits, space or NUL terminated.
uint64_t octal(const char* field, size_t width) {
    uint64_t v = 0;
    for (size_t i = 0; i < width && field[i] != '\0' && field[i] != ' '; i++) {
        if (field[i] < '0' || field[i] > '7') return UINT64_MAX;
        v = v * 8 + static_cast<uint64_t>(field[i] - '0');
    }
    return v;
}

std::string text(const char* field, size_t width) { return std::string(field, strnlen(field, width)); }

// The "path" record of a pax extended header ("<len> path=<value>\n" records, <len> counting
// the whole record); InputError naming the archive and the header's offset for a record whose
// length is no number, too short for its own "<len> " and newline, or past the header's end.
std::string pax_path(const std::byte* p, size_t n, const std::string& what, size_t header_at) {
    std::string body(reinterpret_cast<const char*>(p), n);
    size_t at = 0;
    while (at < body.size()) {
        const size_t space = body.find(' ', at);
        if (space == std::string::npos) break;
        size_t len = 0;
        const auto [end, ec] = std::from_chars(body.data() + at, body.data() + space, len);
        if (ec != std::errc() || end != body.data() + space || len < space - at + 2 || len > body.size() - at) {
            throw InputError(fmt::format("{}: damaged pax header at byte {}", what, header_at),
                             "the download is damaged; fetch it again");
        }
        const std::string record = body.substr(space + 1, len - (space - at) - 2);  // drop '\n'
        if (record.rfind("path=", 0) == 0) return record.substr(5);
        at += len;
    }
    return {};
}

}  // namespace

std::vector<std::byte> gunzip(std::span<const std::byte> data, const std::string& what) {
    z_stream z{};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw Error("zlib: cannot initialise inflate");
    std::vector<std::byte> out(data.size() * 4 + 1024);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
        if (z.total_out == out.size()) out.resize(out.size() * 2);
        z.next_out = reinterpret_cast<Bytef*>(out.data() + z.total_out);
        z.avail_out = static_cast<uInt>(out.size() - z.total_out);
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && z.avail_out == 0)) {
            inflateEnd(&z);
            throw InputError(fmt::format("{}: not a valid gzip stream ({})", what,
                                         z.msg ? z.msg : "truncated"),
                             "the download is damaged; fetch it again");
        }
    }
    out.resize(z.total_out);
    inflateEnd(&z);
    return out;
}

std::vector<TarEntry> read_tar_gz(std::span<const std::byte> archive, const std::string& what) {
    const std::vector<std::byte> tar = gunzip(archive, what);
    std::vector<TarEntry> entries;
    std::string long_name;  // from a pax or GNU header, for the entry that follows
    for (size_t at = 0; at + kBlock <= tar.size();) {
        const char* h = reinterpret_cast<const char*>(tar.data() + at);
        if (std::all_of(h, h + kBlock, [](char c) { return c == 0; })) break;  // end of archive
        uint64_t sum = 0;
        for (size_t i = 0; i < kBlock; i++) {
            sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
        }
        const uint64_t size = octal(h + 124, 12);
        if (octal(h + 148, 8) != sum || size == UINT64_MAX) {
            throw InputError(fmt::format("{}: damaged tar header at byte {}", what, at),
                             "the download is damaged; fetch it again");
        }
        const size_t data_at = at + kBlock;
        if (data_at + size > tar.size()) {
            throw InputError(fmt::format("{}: tar entry at byte {} runs past the end", what, at),
                             "the download is truncated; fetch it again");
        }
        const char type = h[156];
        const std::byte* body = tar.data() + data_at;
        if (type == 'x') {
            long_name = pax_path(body, size, what, at);
        } else if (type == 'L') {
            long_name = text(reinterpret_cast<const char*>(body), size);
        } else if (type == '0' || type == '\0') {
            std::string path = long_name;
            if (path.empty()) {
                const std::string prefix = text(h + 345, 155);
                path = (prefix.empty() ? "" : prefix + "/") + text(h, 100);
            }
            entries.push_back({path, std::vector<std::byte>(body, body + size)});
            long_name.clear();
        } else {
            long_name.clear();  // directories, links, global pax headers: nothing to keep
        }
        at = data_at + (size + kBlock - 1) / kBlock * kBlock;
    }
    return entries;
}

}  // namespace lmforge
