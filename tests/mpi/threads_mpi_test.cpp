// Default threads under mpirun, with real processes: unbound, the processes of a host share
// its cores; bound one to a core each, each takes its core; alone, a process takes them all.
// (The arithmetic for larger machines: tests/unit/threads_for_test.cpp.)
#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>
#include <string>

#include "cli_util.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

using test::kMpirun;
using test::run_lmforge;

int own_cores() {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

class ThreadsMpi : public test::TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        std::string text;
        for (int i = 0; i < 400; i++) text += "call me ishmael, some years ago. ";
        ASSERT_EQ(run_lmforge("prepare --tokenizer char --input " + write("c.txt", text) + " --output " + path("data")).status, 0);
        config_ = write("run.toml", "[model]\npreset = \"gpt2-nano\"\nn_layer = 1\nn_head = 2\nn_embd = 32\nblock_size = 16\n"
                                    "[data]\ndir = \"" + path("data") + "\"\n[train]\nbatch_size = 2\nseq_len = 16\n"
                                    "max_steps = 1\nthreads = 0\n[eval]\nevery = 0\n[checkpoint]\nevery = 0\n"
                                    "[sample]\ncount = 0\n[log]\nplots = false\n");
    }
    // The trainer's first line: "... N process(es) (mpi) x T threads, ...".
    std::string threads_line(int np, const std::string& binding, const std::string& run) {
        const auto o = run_lmforge("train " + config_ + " --set run.dir=" + path(run),
                                   kMpirun + std::to_string(np) + " --bind-to " + binding + " ");
        EXPECT_EQ(o.status, 0) << o.err;
        return o.out + o.err;
    }
    std::string config_;
};

TEST_F(ThreadsMpi, UnboundProcessesShareTheCoresBoundOnesTakeTheirOwn) {
    const int cores = own_cores();
    const auto expect = [](const std::string& log, const std::string& want) {
        EXPECT_NE(log.find(want), std::string::npos) << want << "\n" << log;
    };
    expect(threads_line(1, "none", "one"), "1 process (mpi) x " + std::to_string(cores) + " threads");
    expect(threads_line(2, "none", "two"), "2 processes (mpi) x " + std::to_string(std::max(1, cores / 2)) + " threads");
    if (cores >= 2) expect(threads_line(2, "core", "cores"), "2 processes (mpi) x 1 threads");
}

}  // namespace
}  // namespace lmforge
