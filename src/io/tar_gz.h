// Reads .tar.gz archives (npm packages): gunzip with zlib, then the ustar format, with pax and
// GNU long names. Only regular files are returned; directories and links are skipped.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace lmforge {

struct TarEntry {
    std::string path;  // as stored, e.g. "package/data/data.txt"
    std::vector<std::byte> data;
};

// `what` names the archive in errors (InputError: not gzip, truncated, bad header checksum).
std::vector<TarEntry> read_tar_gz(std::span<const std::byte> archive, const std::string& what);

// The gzip stream's uncompressed bytes.
std::vector<std::byte> gunzip(std::span<const std::byte> data, const std::string& what);

}  // namespace lmforge
