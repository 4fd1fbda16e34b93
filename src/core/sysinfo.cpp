#include "core/sysinfo.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

namespace lmforge {

double peak_rss_mb() {
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
        }
    }
    return "unknown";
}

std::string host_name() {
    char host[256] = {};
    return ::gethostname(host, sizeof(host) - 1) == 0 ? std::string(host) : std::string("?");
}

}  // namespace lmforge
