// The logger: the one piece of process-wide mutable state. Lines go to stderr (and to a file
// once a run directory exists), each prefixed by its level, and by the rank in a
// multi-process run.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>

namespace lmforge::log {

enum class Level { Debug = 0, Info = 1, Warn = 2, Error = 3 };

void set_level(Level level);
void set_rank(int rank);                  // -1: a single process, no prefix
int rank();
void set_file(const std::string& path);  // also append lines to this file; "" to stop
void write(Level level, std::string_view message);
// Writes to the log file only (not stderr): for long records such as a run's configuration.
void to_file(std::string_view text);
// Sends the lines meant for stderr through `sink` instead (e.g. to print them above a
// progress bar); an empty function restores plain stderr.
void set_stderr_sink(std::function<void(const std::string&)> sink);

template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
    write(Level::Info, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
    write(Level::Warn, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
    write(Level::Debug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace lmforge::log
