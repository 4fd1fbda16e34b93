// Running the lmforge program from tests: exit status, standard output and error.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

// Runs `lmforge <args>` through the shell (args may hold redirections such as "< file").
inline Outcome run_lmforge(const std::string& args) {
    const auto dir = std::filesystem::temp_directory_path();
    // ctest runs cases as parallel processes: the pid keeps their files apart.
    const std::string tag = std::to_string(::getpid());
    const std::string out = (dir / ("lmforge_cli_out_" + tag)).string();
    const std::string err = (dir / ("lmforge_cli_err_" + tag)).string();
    const std::string cmd = std::string(LMFORGE_BINARY) + " " + args + " >" + out + " 2>" + err;
    const int raw = std::system(cmd.c_str());
    Outcome o{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return o;
}

inline int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

}  // namespace lmforge::test
