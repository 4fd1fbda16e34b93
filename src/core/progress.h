// A progress report on stderr: on a terminal, one line redrawn in place with a bar, rate and
// time left; otherwise (logs, CI) a plain line at each tenth of the way. Not thread-safe:
// callers advance it from one thread at a time.
#pragma once

#include <string>

#include "core/timer.h"

namespace lmforge {

class Progress {
public:
    // total: the amount of work, counted in units of `unit` after dividing by unit_scale
    // (e.g. bytes shown as MB: unit "MB", unit_scale 1e6).
    Progress(std::string label, double total, std::string unit, double unit_scale);
    ~Progress();
    void advance(double amount);
    // Sets the amount done (instead of adding to it), with a status shown after the bar.
    void update(double done, const std::string& status);
    void set_total(double total) { total_ = total; }
    // Prints a line (ending in a newline) above the bar, then redraws the bar.
    void print_above(const std::string& line);
    void finish();  // draws 100% and ends the line
    static bool terminal();  // whether stderr is a terminal

private:
    void draw(bool force);

    std::string label_, unit_, status_;
    double total_, scale_, done_ = 0;
    bool tty_, finished_ = false;
    int last_tenth_ = -1;
    double last_draw_ = -1;
    Timer timer_;
};

}  // namespace lmforge
