#include "io/tensorboard.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstring>

#include "core/error.h"

namespace lmforge {

namespace {

const std::array<uint32_t, 256>& crc_table() {
    static const auto table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    return table;
}

uint32_t masked_crc(std::span<const std::byte> data) {
    const uint32_t c = crc32c(data);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// Protocol buffer wire format: field key = (number << 3) | wire type.
void varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out += static_cast<char>((v & 0x7f) | 0x80);
        v >>= 7;
    }
    out += static_cast<char>(v);
}
template <class T>
void fixed(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // little-endian, as the wire format
    out.append(b, sizeof(T));
}
void bytes_field(std::string& out, int number, const std::string& bytes) {
    varint(out, (static_cast<uint64_t>(number) << 3) | 2);
    varint(out, bytes.size());
    out += bytes;
}

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Event{wall_time = 1, step = 2}: what every event of a step begins with.
std::string event_now(int64_t step) {
    std::string event;
    varint(event, (1 << 3) | 1);
    fixed(event, now_seconds());
    varint(event, (2 << 3) | 0);
    varint(event, static_cast<uint64_t>(step));
    return event;
}

}  // namespace

uint32_t crc32c(std::span<const std::byte> data) {
    uint32_t c = 0xFFFFFFFFu;
    for (const std::byte b : data) c = crc_table()[(c ^ static_cast<uint8_t>(b)) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    // TensorBoard reads a run's files in name order. Two sessions in one second would sort by
    // their pids' text ("10001" before "9999"), so the time in the name moves past every
    // existing file's.
    auto seconds = static_cast<int64_t>(now_seconds());
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("events.out.tfevents.", 0) != 0) continue;
        try {
            seconds = std::max<int64_t>(seconds, std::stoll(name.substr(20)) + 1);
        } catch (const std::exception&) {
            // not a name of this form: no order to keep
        }
    }
    path_ = fmt::format("{}/events.out.tfevents.{}.{}.{}", dir, seconds, host, ::getpid());
    file_ = std::fopen(path_.c_str(), "wb");
    if (file_ == nullptr) throw Error(fmt::format("{}: cannot create the event file", path_));
    std::string event;  // Event{wall_time = 1, file_version = 3}
    varint(event, (1 << 3) | 1);
    fixed(event, now_seconds());
    bytes_field(event, 3, "brain.Event:2");
    record(event);
}

TensorBoardWriter::~TensorBoardWriter() {
    if (file_ != nullptr) std::fclose(file_);
}

void TensorBoardWriter::scalar(const std::string& tag, int64_t step, double value) {
    std::string v;  // Summary.Value{tag = 1, simple_value = 2}
    bytes_field(v, 1, tag);
    varint(v, (2 << 3) | 5);
    fixed(v, static_cast<float>(value));
    std::string summary;  // Summary{value = 1}
    bytes_field(summary, 1, v);
    std::string event = event_now(step);  // + summary = 5
    bytes_field(event, 5, summary);
    record(event);
}

void TensorBoardWriter::session_start(int64_t step) {
    std::string log;  // SessionLog{status = 1: START = 1}
    varint(log, (1 << 3) | 0);
    varint(log, 1);
    std::string event = event_now(step);  // + session_log = 7
    bytes_field(event, 7, log);
    record(event);
}

void TensorBoardWriter::record(const std::string& event) {
    std::string r;
    const uint64_t len = event.size();
    fixed(r, len);
    fixed(r, masked_crc(std::as_bytes(std::span(r.data(), 8))));
    r += event;
    fixed(r, masked_crc(std::as_bytes(std::span(event.data(), event.size()))));
    if (std::fwrite(r.data(), 1, r.size(), file_) != r.size() || std::fflush(file_) != 0) {
        throw Error(fmt::format("{}: cannot write", path_), "check free disk space");
    }
}

}  // namespace lmforge
