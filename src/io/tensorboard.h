// TensorBoard event files (events.out.tfevents.*), scalars only: TFRecord framing (length,
// masked CRC-32C, data, masked CRC-32C) around Event protocol buffers, encoded by hand for the
// few fields scalars need. Each record is flushed, so a killed run's events stay readable.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace lmforge {

class TensorBoardWriter {
public:
    // Creates a new event file in dir (Error if it cannot), named to sort after those there.
    explicit TensorBoardWriter(const std::string& dir);
    ~TensorBoardWriter();
    TensorBoardWriter(const TensorBoardWriter&) = delete;
    TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

    void scalar(const std::string& tag, int64_t step, double value);
    // A session starts at `step` (SessionLog START). TensorBoard's event reader drops the
    // events it has read before a START whose step is that step or later: the steps a resumed
    // run repeats after its last checkpoint are shown once, as redone. (It reads a directory's
    // files in name order, which the constructor makes the order of creation.)
    void session_start(int64_t step);
    const std::string& path() const { return path_; }

private:
    void record(const std::string& event);
    std::string path_;
    std::FILE* file_ = nullptr;
};

// CRC-32C (Castagnoli), as TFRecord uses.
uint32_t crc32c(std::span<const std::byte> data);

}  // namespace lmforge
