// The best of each rate measured on this machine (the peak GFLOP/s, the bandwidth of memory and
// of each cache), kept between runs. The denominators of utilisation and of the roofline must
// be what the machine can do, yet a shared host sometimes runs a guest's cores or memory at
// half speed for a minute (another guest on the same physical core, a neighbour's traffic):
// on a Zen 5 guest the bf16 peak read 540 GFLOP/s in one run and 1078 in the next, memory 38
// and 121 GB/s within an hour, and a model timed in a good minute then ran "above" the peak of a
// bad one. So each measurement is set against the best on record for this CPU, and the higher
// figure is both used and kept.
//
// The record: <lmforge home>/machine-figures.json (core/home_dir.h), one object per CPU
// signature (core/sysinfo.h), a figure per name. Delete it to start again, after a change
// the signature does not see (a BIOS setting, the host's memory).
#pragma once

#include <string>

namespace lmforge::backend {

// The higher of `measured` and the best on record for `name` on this CPU, after recording
// it. An unreadable record counts as empty; one that cannot be written leaves the figure to
// this process alone (a read-only home is no reason to stop a run).
double best_figure(const std::string& name, double measured);

std::string best_figures_path();

}  // namespace lmforge::backend
