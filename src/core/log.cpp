#include "core/log.h"

#include <cstdio>
#include <mutex>

namespace lmforge::log {

namespace {

struct Logger {
    std::mutex mutex;
    Level level = Level::Info;
    int rank = -1;
    std::FILE* file = nullptr;
    std::function<void(const std::string&)> sink;
};

Logger& logger() {
    static Logger instance;
    return instance;
}

const char* level_name(Level level) {
    switch (level) {
        case Level::Debug: return "debug";
        case Level::Info: return "info";
        case Level::Warn: return "warn";
        case Level::Error: return "error";
    }
    return "?";
}

}  // namespace

void set_level(Level level) { logger().level = level; }

void set_rank(int rank) { logger().rank = rank; }

int rank() { return logger().rank; }

void set_stderr_sink(std::function<void(const std::string&)> sink) {
    Logger& l = logger();
    std::lock_guard lock(l.mutex);
    l.sink = std::move(sink);
}

void set_file(const std::string& path) {
    Logger& l = logger();
    std::lock_guard lock(l.mutex);
    if (l.file != nullptr) std::fclose(l.file);
    l.file = path.empty() ? nullptr : std::fopen(path.c_str(), "a");
}

void to_file(std::string_view text) {
    Logger& l = logger();
    std::lock_guard lock(l.mutex);
    if (l.file == nullptr) return;
    std::fwrite(text.data(), 1, text.size(), l.file);
    std::fflush(l.file);
}

void write(Level level, std::string_view message) {
    Logger& l = logger();
    if (level < l.level) return;
    const std::string line =
        l.rank < 0 ? fmt::format("[{}] {}\n", level_name(level), message)
                   : fmt::format("[rank {}] [{}] {}\n", l.rank, level_name(level), message);
    std::lock_guard lock(l.mutex);
    if (l.sink) {
        l.sink(line);
    } else {
        std::fputs(line.c_str(), stderr);
    }
    if (l.file != nullptr) {
        std::fputs(line.c_str(), l.file);
        std::fflush(l.file);
    }
}

}  // namespace lmforge::log
