// Facts about this process and machine that runs and benchmarks report.
#pragma once

#include <string>

namespace lmforge {

double peak_rss_mb();       // the process's high-water resident set, in MiB
std::string cpu_model();    // "model name" from /proc/cpuinfo, or "unknown"
// What tells this CPU from another that may share its model name: "AMD EPYC | family 26 model
// 2 stepping 1 | 2 CPUs | flags 1f2e3d4c5b6a7988" (the flags' hash): a virtual machine's model
// name may be the vendor's alone, and its flags the features the host lets it see.
std::string cpu_signature();
std::string host_name();    // this machine's, or "?"

}  // namespace lmforge
