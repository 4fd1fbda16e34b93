// A request to stop training at the next step boundary and save a checkpoint there, made by a
// signal: SIGINT (Ctrl-C), SIGTERM (a batch scheduler's notice before it kills) or SIGUSR1.
// Under mpirun only SIGUSR1, which mpirun forwards to every process; SIGINT and SIGTERM it
// answers by terminating the job itself (distributed/comm_mpi.cpp says so). A second signal of the
// same kind ends the process at once, as if nothing were installed: a step can be long. The
// handlers run on the thread that takes lmforge's signals (core/signal_thread.h).
#pragma once

namespace lmforge {

class StopRequest {
public:
    // Installs the handlers until destruction (then the previous ones are back, or SIG_IGN for
    // a late signal, below).
    explicit StopRequest(bool under_mpirun);
    ~StopRequest();
    StopRequest(const StopRequest&) = delete;
    StopRequest& operator=(const StopRequest&) = delete;

    int signal() const;  // the signal received, 0 if none

    // A stop that another process's signal asked for: that signal is on its way here too
    // (mpirun forwards it to every process) and may arrive after this request is gone, when
    // its default action would end the process; it is ignored from then on instead.
    void ignore_late(int sig) { late_ = sig; }

private:
    int late_ = 0;
};

// "SIGINT", "SIGTERM", "SIGUSR1", or "a signal".
const char* signal_name(int sig);

}  // namespace lmforge
