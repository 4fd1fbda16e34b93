// Running the lmforge program from tests: exit status, standard output and error.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace lmforge::test {

struct Outcome {
    int status;
    std::string out, err;
};

inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// mpirun as root (CI machines) needs the first two variables; --oversubscribe allows more
// ranks than cores. In sanitizer builds, OpenMPI's plugins leak a few kilobytes at exit and
// are unloaded before the leak report (so not even a suppression can name them): the MPI
// processes skip the leak check; AddressSanitizer's other checks stay on.
inline const std::string kMpirun =
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0 "
    "mpirun --oversubscribe --mca btl self,tcp,vader -np ";

// Runs `<prefix>lmforge <args>` through the shell (args may hold redirections such as "< file").
inline Outcome run_lmforge(const std::string& args, const std::string& prefix = "") {
    const auto dir = std::filesystem::temp_directory_path();
    // ctest runs cases as parallel processes: the pid keeps their files apart.
    const std::string tag = std::to_string(::getpid());
    const std::string out = (dir / ("lmforge_cli_out_" + tag)).string();
    const std::string err = (dir / ("lmforge_cli_err_" + tag)).string();
    const std::string cmd = prefix + std::string(LMFORGE_BINARY) + " " + args + " >" + out + " 2>" + err;
    const int raw = std::system(cmd.c_str());
    Outcome o{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return o;
}

// `mpirun -np <np> lmforge <args>`: real MPI processes.
inline Outcome run_lmforge_mpi(int np, const std::string& args) {
    return run_lmforge(args, kMpirun + std::to_string(np) + " ");
}

// Starts `lmforge <args>` in the background (output to log_path); returns its pid.
inline pid_t spawn_lmforge(const std::vector<std::string>& args, const std::string& log_path) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        std::FILE* log = std::freopen(log_path.c_str(), "w", stdout);
        if (log != nullptr) ::dup2(::fileno(stdout), 2);
        std::vector<char*> argv = {const_cast<char*>(LMFORGE_BINARY)};
        for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(LMFORGE_BINARY, argv.data());
        ::_exit(127);
    }
    return pid;
}

// Starts `mpirun -np <np> lmforge <args>` in the background (output to log_path); returns
// mpirun's pid (the shell execs it), so that signals and wait_for reach mpirun itself.
inline pid_t spawn_lmforge_mpi(int np, const std::string& args, const std::string& log_path) {
    const std::string cmd = "exec env " + kMpirun + std::to_string(np) + " " + LMFORGE_BINARY + " " + args + " >" +
                            log_path + " 2>&1";
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    return pid;
}

// Training steps a run's metrics.jsonl holds so far (its writer may be midway through a line).
inline int trained_steps(const std::string& metrics_path) {
    const std::string text = slurp(metrics_path);
    int n = 0;
    for (size_t at = text.find("\"loss\""); at != std::string::npos; at = text.find("\"loss\"", at + 1)) n++;
    return n;
}

// Waits until a run's metrics.jsonl holds n steps; false if the timeout came first.
inline bool wait_for_steps(const std::string& metrics_path, int n, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (trained_steps(metrics_path) < n) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

// Waits for pid; returns its exit status, or -signal if a signal ended it.
inline int wait_for(pid_t pid) {
    int raw = 0;
    ::waitpid(pid, &raw, 0);
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -WTERMSIG(raw);
}

inline int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

}  // namespace lmforge::test
