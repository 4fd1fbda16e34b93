#include "core/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace lmforge {

Progress::Progress(std::string label, double total, std::string unit, double unit_scale)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), scale_(unit_scale),
      tty_(isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
    if (!finished_ && tty_ && last_draw_ >= 0) std::fputc('\n', stderr);  // leave the line clean
}

bool Progress::terminal() { return isatty(STDERR_FILENO) == 1; }

void Progress::advance(double amount) {
    done_ += amount;
    draw(false);
}

void Progress::update(double done, const std::string& status) {
    done_ = done;
    status_ = status;
    draw(false);
}

void Progress::print_above(const std::string& line) {
    if (tty_) {
        std::fputs("\r\033[K", stderr);  // clear the bar's line, print, draw the bar again
        std::fputs(line.c_str(), stderr);
        draw(true);
    } else {
        std::fputs(line.c_str(), stderr);
    }
}

void Progress::finish() {
    done_ = total_;
    draw(true);
    if (tty_) std::fputc('\n', stderr);
    finished_ = true;
}

void Progress::draw(bool force) {
    const double t = timer_.seconds();
    const double frac = total_ > 0 ? std::min(1.0, done_ / total_) : 1.0;
    const double rate = t > 0 ? done_ / scale_ / t : 0;
    const double left = frac > 0 && frac < 1 ? t * (1 - frac) / frac : 0;
    if (tty_) {
        if (!force && t - last_draw_ < 0.1) return;  // ten redraws a second are plenty
        last_draw_ = t;
        constexpr int kWidth = 30;
        const int filled = static_cast<int>(frac * kWidth);
        fmt::print(stderr, "\r\033[K{} [{}{}] {:5.1f}% {:.4g}/{:.4g} {} {:.1f} {}/s, {:.0f}s left {}", label_,
                   std::string(filled, '='), std::string(kWidth - filled, ' '), 100 * frac, done_ / scale_,
                   total_ / scale_, unit_, rate, unit_, left, status_);
        std::fflush(stderr);
        return;
    }
    const int tenth = static_cast<int>(frac * 10);
    if (tenth == last_tenth_ || (tenth == 0 && !force)) return;  // each tenth once, 100% once
    last_tenth_ = tenth;
    fmt::print(stderr, "{}: {:3.0f}% ({:.1f} of {:.1f} {}, {:.1f} {}/s)\n", label_, 100 * frac, done_ / scale_,
               total_ / scale_, unit_, rate, unit_);
}

}  // namespace lmforge
