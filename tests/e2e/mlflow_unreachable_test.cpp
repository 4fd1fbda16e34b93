// lmforge train with log.mlflow_uri naming a tracking server that is not there: one line of
// warning, and the run trains, checkpoints and ends as without it. (A real MLflow server, down
// and up again mid-run, is tools/check_mlflow.py's.)
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "cli_util.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

// A port on 127.0.0.1 that nothing listens on: one the kernel just gave out, closed again.
int closed_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        return 1;  // privileged, so nothing of a test's listens there either
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

class MlflowUnreachable : public test::TempDirTest {};

TEST_F(MlflowUnreachable, WarnsOnceAndTrainsOn) {
    std::string text;
    for (int i = 0; i < 3000; i++) text += "the sea and the ship and the whale. ";
    ASSERT_EQ(test::run_lmforge("prepare --tokenizer char --input " + write("corpus.txt", text) + " --output " +
                                path("data"))
                  .status,
              0);
    const std::string uri = "http://127.0.0.1:" + std::to_string(closed_port());
    const std::string cfg = write("run.toml", "[model]\npreset = \"gpt2-nano\"\nn_layer = 1\nn_head = 2\nn_embd = 32\n"
                                              "block_size = 32\n[data]\ndir = \"" + path("data") + "\"\n"
                                              "[train]\nbatch_size = 2\nseq_len = 32\nmax_steps = 6\nthreads = 1\n"
                                              "[eval]\nevery = 3\nbatches = 1\n[checkpoint]\nevery = 3\n"
                                              "[optim]\nwarmup_steps = 2\n[sample]\ncount = 0\n"
                                              "[log]\nmlflow_uri = \"" + uri + "\"\n"
                                              "[run]\ndir = \"" + path("run") + "\"\n");
    const test::Outcome o = test::run_lmforge("train " + cfg);
    ASSERT_EQ(o.status, 0) << o.err;
    std::istringstream lines(o.err);
    int warnings = 0;
    for (std::string line; std::getline(lines, line);) {
        // (Other warnings are not this test's: a busy machine may make the peak FLOP rate
        // measured again, with a warning.)
        if (line.find("[warn]") != std::string::npos && line.find("MLflow") != std::string::npos) {
            warnings++;
            EXPECT_NE(line.find("MLflow at " + uri + " is unreachable or failing"), std::string::npos) << line;
            EXPECT_NE(line.find("training goes on"), std::string::npos) << line;
        }
    }
    EXPECT_EQ(warnings, 1) << o.err;
    EXPECT_TRUE(std::filesystem::exists(path("run/final/model.safetensors"))) << o.err;
    EXPECT_EQ(test::trained_steps(path("run/metrics.jsonl")), 6);
    EXPECT_NE(o.err.find("metric values and the run's end (FINISHED) are not recorded"), std::string::npos) << o.err;
    EXPECT_FALSE(std::filesystem::exists(path("run/mlflow.json")));  // no MLflow run was made
}

}  // namespace
}  // namespace lmforge
