#include "data/fingerprint.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/sha256.h"

namespace lmforge {

namespace {

constexpr std::streamoff kSpan = 1 << 20;  // bytes hashed at each end of a file

void hash_range(Sha256& hash, std::ifstream& in, std::streamoff begin, std::streamoff n, const std::string& path) {
    std::string bytes(static_cast<size_t>(n), '\0');
    in.seekg(begin);
    if (!in.read(bytes.data(), n)) throw InputError(fmt::format("{}: cannot read", path));
    hash.update(bytes);
}

}  // namespace

std::string data_fingerprint(const std::vector<std::string>& paths) {
    Sha256 hash;
    for (const std::string& path : paths) {
        std::error_code ec;
        const auto size = static_cast<std::streamoff>(std::filesystem::file_size(path, ec));
        std::ifstream in(path, std::ios::binary);
        if (ec || !in) throw InputError(fmt::format("{}: cannot read", path));
        hash.update(fmt::format("{}\n{}\n", std::filesystem::path(path).filename().string(), size));
        hash_range(hash, in, 0, std::min(size, kSpan), path);
        if (size > kSpan) hash_range(hash, in, std::max(kSpan, size - kSpan), std::min(kSpan, size - kSpan), path);
    }
    return hash.hex().substr(0, 16);
}

}  // namespace lmforge
