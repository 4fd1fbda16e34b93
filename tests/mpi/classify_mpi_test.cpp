// Classification under mpirun, GPT-2 and BERT: 2 ranks with batch B train as 1 rank with 2B (the same
// examples in every step, the gradient averaged over ranks), each rank evaluating its part of
// every split, the confusion matrices summed: the test reports agree.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "labelled_texts.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

class ClassifyMpi : public test::TempDirTest {
public:
    void SetUp() override {
        TempDirTest::SetUp();
        const std::string jsonl = write("texts.jsonl", test::labelled_texts(300));
        ASSERT_EQ(test::run_lmforge("prepare --tokenizer char --input " + jsonl +
                                    " --label-field label --max-len 48 --output " + path("data")).status, 0);
    }
    std::string config(const std::string& run, int batch, const std::string& preset = "gpt2-nano") {
        return write(run + ".toml", "[model]\npreset = \"" + preset + "\"\nn_layer = 2\nn_head = 2\nn_embd = 32\n"
                                    "[data]\ndir = \"" + path("data") + "\"\n[train]\ntask = \"classify\"\n"
                                    "batch_size = " + std::to_string(batch) + "\nepochs = 3\nthreads = 1\n"
                                    "precision = \"fp32\"\n[optim]\nlr = 3e-3\nwarmup_steps = 5\n"
                                    "[run]\ndir = \"" + path(run) + "\"\n");
    }
    nlohmann::json report(const std::string& run) {
        std::ifstream in(path(run + "/test_report.json"));
        return nlohmann::json::parse(in);
    }
};

// 2 ranks with batch B against 1 rank with 2B, for a model preset.
void expect_two_ranks_report_as_one(ClassifyMpi& t, const std::string& preset) {
    const auto one = test::run_lmforge("train " + t.config(preset + "-one", 16, preset));
    ASSERT_EQ(one.status, 0) << one.err;
    const auto two = test::run_lmforge_mpi(2, "train " + t.config(preset + "-two", 8, preset));
    ASSERT_EQ(two.status, 0) << two.err;
    EXPECT_NE(two.err.find("2 processes"), std::string::npos) << two.err;
    const auto a = t.report(preset + "-one"), b = t.report(preset + "-two");
    EXPECT_EQ(b["model"]["total"], a["model"]["total"]);  // every test example counted once
    EXPECT_EQ(b["best_epoch"], a["best_epoch"]);
    // The same training up to float rounding in the averaged gradients: the same decisions,
    // but for at most one example near the boundary (which moves two cells by one).
    int64_t moved = 0;
    for (size_t r = 0; r < a["model"]["confusion_matrix"].size(); r++)
        for (size_t p = 0; p < a["model"]["confusion_matrix"][r].size(); p++)
            moved += std::abs(a["model"]["confusion_matrix"][r][p].get<int64_t>() -
                              b["model"]["confusion_matrix"][r][p].get<int64_t>());
    EXPECT_LE(moved, 2) << a.dump() << "\n" << b.dump();
    EXPECT_NEAR(b["test_loss"].get<double>(), a["test_loss"].get<double>(), 1e-3);
}

TEST_F(ClassifyMpi, TwoRanksWithBatchBReportAsOneRankWith2B) { expect_two_ranks_report_as_one(*this, "gpt2-nano"); }

// BERT: each rank pads its own batch to its longest example; the padding is masked out, so
// the training is the same.
TEST_F(ClassifyMpi, BertTwoRanksReportAsOneRank) { expect_two_ranks_report_as_one(*this, "bert-tiny"); }

}  // namespace
}  // namespace lmforge
