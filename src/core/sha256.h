// SHA-256 (FIPS 180-4), to check downloaded and unpacked data against the sums the project
// keeps. Incremental: update() as bytes arrive, hex() at the end.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace lmforge {

class Sha256 {
public:
    Sha256();
    void update(std::span<const std::byte> data);
    void update(std::string_view data) {
        update(std::span(reinterpret_cast<const std::byte*>(data.data()), data.size()));
    }
    std::string hex();  // finishes the hash: lowercase hex, 64 characters

    static std::string of(std::span<const std::byte> data);
    static std::string of(std::string_view data);
    static std::string of_file(const std::string& path);  // InputError if unreadable

private:
    void block(const uint8_t* p);
    std::array<uint32_t, 8> h_;
    std::array<uint8_t, 64> buffer_{};
    size_t buffered_ = 0;
    uint64_t length_ = 0;  // bytes hashed so far
};

}  // namespace lmforge
