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
std::atomic<bool> g_under_srun{false};  // then a repeat is absorbed, and said once

struct Installed {
    int sig;
    struct sigaction previous;
};
std::vector<Installed> g_installed;

// Async-signal-safe: a flag and a fixed message, nothing else. errno is kept: the code the
// signal interrupted may be about to read it.
void on_stop_signal(int sig) {
    const int saved_errno = errno;
    const int before = g_signal.exchange(sig, std::memory_order_relaxed);
    static const char kMessage[] =
        "lmforge: stop requested: finishing this step to save a checkpoint (send it again to stop at once)\n";
    static const char kSrunMessage[] =
        "lmforge: stop requested: finishing this step to save a checkpoint (scancel --signal=KILL stops at once)\n";
    if (!g_under_srun.load(std::memory_order_relaxed)) {
        [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    } else if (before == 0) {
        [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kSrunMessage, sizeof(kSrunMessage) - 1);
    }
    errno = saved_errno;
}

}  // namespace

StopRequest::StopRequest(Launcher launcher) : launcher_(launcher) {
    if (!g_installed.empty()) throw Error("StopRequest: one at a time");
    g_signal.store(0, std::memory_order_relaxed);
    g_under_srun.store(launcher == Launcher::Srun, std::memory_order_relaxed);
    std::vector<int> signals = {SIGUSR1};
    if (launcher != Launcher::Mpirun) signals.insert(signals.end(), {SIGINT, SIGTERM});
    for (int sig : signals) {
        struct sigaction action = {};
        action.sa_handler = on_stop_signal;
        sigemptyset(&action.sa_mask);
        // Back to the default action once delivered: the second signal ends the process (not
        // under srun). SA_RESTART: a write or read the signal interrupts goes on.
        action.sa_flags = SA_RESTART | (launcher == Launcher::Srun ? 0 : SA_RESETHAND);
        Installed i{sig, {}};
        sigaction(sig, &action, &i.previous);
        g_installed.push_back(i);
    }
}

StopRequest::~StopRequest() {
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    // Under srun, once stopped, Slurm's repeats until the process exits change nothing.
    const bool stopped_under_srun = launcher_ == Launcher::Srun && signal() != 0;
    for (const Installed& i : g_installed) {
        sigaction(i.sig, i.sig == late_ || stopped_under_srun ? &ignore : &i.previous, nullptr);
    }
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
