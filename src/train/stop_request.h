// A request to stop training at the next step boundary and save a checkpoint there, made by a
// signal: SIGINT (Ctrl-C), SIGTERM (a batch scheduler's notice before it kills) or SIGUSR1.
// Under mpirun only SIGUSR1, which mpirun forwards to every process; SIGINT and SIGTERM it
// answers by terminating the job itself (distributed/comm_mpi.cpp says so). A second signal of
// the same kind ends the process at once, as if nothing were installed: a step can be long.
// Under srun, which signals every task itself (scancel, a job's time limit), all three, and a
// repeat is absorbed instead: Slurm sends a time limit's SIGTERM twice in a row (50 ms apart on
// Slurm 22.05), and ends the job itself (SIGKILL) KillWait seconds after. The handlers run on
// the thread that takes lmforge's signals (core/signal_thread.h).
#pragma once

namespace lmforge {

class StopRequest {
public:
    enum class Launcher { None, Mpirun, Srun };  // what started the process

    // Installs the handlers until destruction (then the previous ones are back, or SIG_IGN for
    // a late signal, below; under srun, for every stop signal once one has come).
    explicit StopRequest(Launcher launcher);
    ~StopRequest();
    StopRequest(const StopRequest&) = delete;
    StopRequest& operator=(const StopRequest&) = delete;

    int signal() const;  // the signal received, 0 if none

    // A stop that another process's signal asked for: that signal is on its way here too
    // (mpirun forwards it to every process) and may arrive after this request is gone, when
    // its default action would end the process; it is ignored from then on instead.
    void ignore_late(int sig) { late_ = sig; }

private:
    Launcher launcher_;
    int late_ = 0;
};

// "SIGINT", "SIGTERM", "SIGUSR1", or "a signal".
const char* signal_name(int sig);

}  // namespace lmforge
