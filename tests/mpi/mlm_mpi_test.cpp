// Masked-LM pretraining under mpirun: 2 processes split every step's batches and the
// validation batches (whose masks do not depend on the number of ranks), and learn about as
// one (within 10% of its validation loss: training masks are drawn per rank).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "labelled_texts.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

class MlmMpi : public test::TempDirTest {};

TEST_F(MlmMpi, TwoRanksPretrainAndReachTheValidationLossOfOne) {
    std::string corpus;
    std::istringstream lines(test::labelled_texts(3000));
    for (std::string line; std::getline(lines, line);) corpus += nlohmann::json::parse(line)["text"].get<std::string>() + ".\n";
    ASSERT_EQ(test::run_lmforge("prepare --tokenizer char --input " + write("corpus.txt", corpus) + " --output " +
                                path("data")).status, 0);
    const auto config = [&](const std::string& run, int batch) {
        return write(run + ".toml", "[model]\npreset = \"bert-tiny\"\nn_layer = 2\nn_head = 2\nn_embd = 32\n"
                                    "block_size = 64\n[data]\ndir = \"" + path("data") + "\"\n[train]\ntask = \"mlm\"\n"
                                    "batch_size = " + std::to_string(batch) + "\nseq_len = 64\nmax_steps = 30\n"
                                    "threads = 1\nprecision = \"fp32\"\n[optim]\nlr = 3e-3\nwarmup_steps = 5\n"
                                    "[eval]\nevery = 0\nbatches = 6\n[run]\ndir = \"" + path(run) + "\"\n");
    };
    const auto one = test::run_lmforge("train " + config("one", 16));
    ASSERT_EQ(one.status, 0) << one.err;
    const auto two = test::run_lmforge_mpi(2, "train " + config("two", 8));
    ASSERT_EQ(two.status, 0) << two.err;
    EXPECT_NE(two.err.find("2 processes"), std::string::npos) << two.err;
    EXPECT_TRUE(std::filesystem::exists(path("two/final/model.safetensors")));
    const auto val_loss = [&](const std::string& run) {
        std::ifstream in(path(run + "/metrics.jsonl"));
        double loss = -1;
        for (std::string line; std::getline(in, line);) {
            const auto j = nlohmann::json::parse(line);
            if (j.contains("val_loss")) loss = j["val_loss"];
        }
        return loss;
    };
    // Training masks are drawn per rank, so the runs differ a little; the validation masks
    // are the same, and both runs learn alike from the same batches of pieces.
    EXPECT_GT(val_loss("two"), 0.0);
    EXPECT_NEAR(val_loss("two"), val_loss("one"), 0.1 * val_loss("one"));
}

}  // namespace
}  // namespace lmforge
