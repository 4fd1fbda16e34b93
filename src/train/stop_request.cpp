#include "train/stop_request.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <vector>

#include "core/error.h"

namespace lmforge {

namespace {

// Set on the signal thread, read on the training thread: an atomic (lock-free, so the handler
// may store to it), not a volatile sig_atomic_t, which only serves a handler and the thread it
// interrupted.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

struct Installed {
    int sig;
    struct sigaction previous;
};
std::vector<Installed> g_installed;

// Async-signal-safe: a flag and a fixed message, nothing else. errno is kept: the code the
// signal interrupted may be about to read it.
void on_stop_signal(int sig) {
    const int saved_errno = errno;
    g_signal.store(sig, std::memory_order_relaxed);
    static const char kMessage[] =
        "lmforge: stop requested: finishing this step to save a checkpoint (send it again to stop at once)\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    errno = saved_errno;
}

}  // namespace

StopRequest::StopRequest(bool under_mpirun) {
    if (!g_installed.empty()) throw Error("StopRequest: one at a time");
    g_signal.store(0, std::memory_order_relaxed);
    std::vector<int> signals = {SIGUSR1};
    if (!under_mpirun) signals.insert(signals.end(), {SIGINT, SIGTERM});
    for (int sig : signals) {
        struct sigaction action = {};
        action.sa_handler = on_stop_signal;
        sigemptyset(&action.sa_mask);
        // Back to the default action once delivered: the second signal ends the process.
        // SA_RESTART: a write or read the signal interrupts goes on.
        action.sa_flags = SA_RESETHAND | SA_RESTART;
        Installed i{sig, {}};
        sigaction(sig, &action, &i.previous);
        g_installed.push_back(i);
    }
}

StopRequest::~StopRequest() {
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    for (const Installed& i : g_installed) sigaction(i.sig, i.sig == late_ ? &ignore : &i.previous, nullptr);
    g_installed.clear();
}

int StopRequest::signal() const { return g_signal.load(std::memory_order_relaxed); }

const char* signal_name(int sig) {
    switch (sig) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
        case SIGUSR1: return "SIGUSR1";
        default: return "a signal";
    }
}

}  // namespace lmforge
