#include "core/sysinfo.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <fstream>
#include <map>

#include "core/sha256.h"

namespace lmforge {

double peak_rss_mb() {
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

namespace {

// The first processor's fields of /proc/cpuinfo, by name ("model name", "flags", ...).
std::map<std::string, std::string> first_cpu_fields() {
    std::map<std::string, std::string> fields;
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line) && !line.empty();) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string name = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
        const auto value = line.find_first_not_of(' ', colon + 1);
        fields[name] = value == std::string::npos ? std::string() : line.substr(value);
    }
    return fields;
}

std::string field_or(const std::map<std::string, std::string>& fields, const std::string& name,
                     const std::string& missing) {
    const auto it = fields.find(name);
    return it == fields.end() ? missing : it->second;
}

}  // namespace

std::string cpu_model() { return field_or(first_cpu_fields(), "model name", "unknown"); }

std::string cpu_signature() {
    const auto f = first_cpu_fields();
    return fmt::format("{} | family {} model {} stepping {} | {} CPUs | flags {}", field_or(f, "model name", "unknown"),
                       field_or(f, "cpu family", "?"), field_or(f, "model", "?"), field_or(f, "stepping", "?"),
                       ::sysconf(_SC_NPROCESSORS_ONLN), Sha256::of(field_or(f, "flags", "")).substr(0, 16));
}

std::string host_name() {
    char host[256] = {};
    return ::gethostname(host, sizeof(host) - 1) == 0 ? std::string(host) : std::string("?");
}

}  // namespace lmforge
