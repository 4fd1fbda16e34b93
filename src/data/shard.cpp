#include "data/shard.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace lmforge {

namespace {

InputError bad(const std::string& path, const std::string& why) {
    return InputError(fmt::format("{}: {}", path, why), "the shard is damaged or of another format; prepare it again");
}

// The shape of a NumPy 1-D uint16 array's header: {'descr': '<u2', 'fortran_order': False, 'shape': (N,), }
size_t parse_npy(const std::string& path, std::span<const std::byte> bytes, int64_t& count) {
    if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) throw bad(path, "not a .npy file (bad magic)");
    const uint8_t major = static_cast<uint8_t>(bytes[6]);
    size_t header_len = 0, at = 0;
    if (major == 1) {
        header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
        at = 10;
    } else if (major == 2 || major == 3) {
        if (bytes.size() < 12) throw bad(path, "truncated .npy header");
        uint32_t len;
        std::memcpy(&len, bytes.data() + 8, 4);
        header_len = len;
        at = 12;
    } else {
        throw bad(path, fmt::format(".npy format version {} is not supported", major));
    }
    if (at + header_len > bytes.size()) throw bad(path, "truncated .npy header");
    const std::string header(reinterpret_cast<const char*>(bytes.data()) + at, header_len);
    if (header.find("'descr': '<u2'") == std::string::npos && header.find("'descr': '|u2'") == std::string::npos) {
        throw bad(path, "the .npy array is not uint16 ('<u2')");
    }
    if (header.find("'fortran_order': False") == std::string::npos) throw bad(path, "the .npy array is Fortran-ordered");
    // 'shape': (N,) — one dimension.
    const size_t shape = header.find("'shape': (");
    size_t p = shape == std::string::npos ? std::string::npos : shape + 10, digits = p;
    while (p != std::string::npos && p < header.size() && std::isdigit(static_cast<unsigned char>(header[p]))) p++;
    if (p == std::string::npos || p == digits || p >= header.size() || header[p] != ',' ||
        header.find(')', p) != header.find_first_not_of(", ", p)) {
        throw bad(path, "the .npy array is not one-dimensional");
    }
    // More than 18 digits cannot be a count this file holds (and would not fit an int64).
    if (p - digits > 18) throw bad(path, fmt::format("the .npy shape {} is larger than any file", header.substr(digits, p - digits)));
    count = std::stoll(header.substr(digits, p - digits));
    return at + header_len;
}

// An llm.c header whose count matches the file: raw tokens cannot pass by chance (their
// first four would have to be 55432, 308, 1, 0 and then the file's own length).
bool has_llmc_header(std::span<const std::byte> bytes) {
    constexpr size_t kHeaderBytes = kShardHeaderInts * sizeof(int32_t);
    if (bytes.size() < kHeaderBytes) return false;
    int32_t header[3];
    std::memcpy(header, bytes.data(), sizeof(header));
    return header[0] == kShardMagic && header[1] == kShardVersion && header[2] >= 0 &&
           bytes.size() - kHeaderBytes == static_cast<size_t>(header[2]) * 2;
}

}  // namespace

ShardFormat shard_format_of(const std::string& path) {
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) return ShardFormat::Npy;
    // llm.c's names end in _<digits>.bin.
    if (name.size() < 6 || name.compare(name.size() - 4, 4, ".bin") != 0) return ShardFormat::Raw;
    const size_t underscore = name.rfind('_');
    if (underscore == std::string::npos || underscore + 1 >= name.size() - 4) return ShardFormat::Raw;
    const bool digits = std::all_of(name.begin() + static_cast<ptrdiff_t>(underscore) + 1, name.end() - 4,
                                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
    return digits ? ShardFormat::Llmc : ShardFormat::Raw;
}

void write_shard(const std::string& path, std::span<const uint16_t> tokens) {
    int32_t header[kShardHeaderInts] = {};
    header[0] = kShardMagic;
    header[1] = kShardVersion;
    header[2] = static_cast<int32_t>(tokens.size());
    const std::span<const std::byte> parts[] = {std::as_bytes(std::span(header)), std::as_bytes(tokens)};
    write_file_atomic(path, parts);
}

Shard::Shard(const std::string& path) : file_(path), format_(shard_format_of(path)) {
    const auto bytes = file_.bytes();
    if (format_ == ShardFormat::Raw && has_llmc_header(bytes)) format_ = ShardFormat::Llmc;
    int64_t count = 0;
    size_t data_at = 0;
    switch (format_) {
        case ShardFormat::Llmc: {
            constexpr size_t kHeaderBytes = kShardHeaderInts * sizeof(int32_t);
            if (bytes.size() < kHeaderBytes) {
                throw bad(path, fmt::format("{} bytes, shorter than the 1024-byte header", bytes.size()));
            }
            int32_t header[3];
            std::memcpy(header, bytes.data(), sizeof(header));
            if (header[0] != kShardMagic) {
                throw bad(path, fmt::format("bad magic {} (expected {})", header[0], kShardMagic));
            }
            if (header[1] != kShardVersion) {
                throw bad(path, fmt::format("version {} is not supported (expected {}: uint16 tokens)",
                                            header[1], kShardVersion));
            }
            count = header[2];
            data_at = kHeaderBytes;
            const size_t body = bytes.size() - kHeaderBytes;
            if (count < 0 || body != static_cast<size_t>(count) * 2) {
                throw bad(path, fmt::format("the header says {} tokens but the body holds {} bytes{}", count,
                                            body, body < static_cast<size_t>(std::max<int64_t>(count, 0)) * 2
                                                      ? " (truncated)" : ""));
            }
            break;
        }
        case ShardFormat::Raw:
            if (bytes.size() % 2 != 0) throw bad(path, fmt::format("odd size {}: not uint16 tokens", bytes.size()));
            count = static_cast<int64_t>(bytes.size() / 2);
            break;
        case ShardFormat::Npy:
            data_at = parse_npy(path, bytes, count);
            if (bytes.size() - data_at != static_cast<size_t>(count) * 2) {
                throw bad(path, fmt::format("the .npy header says {} tokens but the data holds {} bytes", count,
                                            bytes.size() - data_at));
            }
            break;
    }
    if (data_at % 2 != 0) throw bad(path, "token data is not 2-byte aligned");
    tokens_ = {reinterpret_cast<const uint16_t*>(bytes.data() + data_at), static_cast<size_t>(count)};
}

void Shard::check_vocab(int64_t vocab_size) const {
    uint16_t max = 0;
#pragma omp parallel for simd reduction(max : max)
    for (size_t i = 0; i < tokens_.size(); i++) max = tokens_[i] > max ? tokens_[i] : max;
    if (max < vocab_size) return;
    const auto it = std::find_if(tokens_.begin(), tokens_.end(), [&](uint16_t t) { return t >= vocab_size; });
    throw InputError(fmt::format("{}: token {} at position {} is outside the vocabulary [0, {})", path(), *it,
                                 it - tokens_.begin(), vocab_size),
                     "the shards were made with a larger vocabulary than the model's");
}

}  // namespace lmforge
