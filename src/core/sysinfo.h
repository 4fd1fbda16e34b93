// Facts about this process and machine that runs and benchmarks report.
#pragma once

#include <string>

namespace lmforge {

double peak_rss_mb();       // the process's high-water resident set, in MiB
std::string cpu_model();    // "model name" from /proc/cpuinfo, or "unknown"
std::string host_name();    // this machine's, or "?"

}  // namespace lmforge
