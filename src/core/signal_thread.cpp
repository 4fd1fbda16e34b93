#include "core/signal_thread.h"

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <mutex>
#include <thread>

namespace lmforge {

void take_signals_on_own_thread() {
    static std::once_flag once;
    std::call_once(once, [] {
        sigset_t handled;
        sigemptyset(&handled);
        for (int sig : {SIGINT, SIGTERM, SIGUSR1}) sigaddset(&handled, sig);
        pthread_sigmask(SIG_BLOCK, &handled, nullptr);
        std::thread([handled] {
            pthread_sigmask(SIG_UNBLOCK, &handled, nullptr);
            for (;;) ::pause();  // returns after each handler; the process's exit ends the thread
        }).detach();
    });
}

}  // namespace lmforge
