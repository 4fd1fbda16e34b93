// Multiple-choice evaluation under mpirun: items sharded over 2 ranks, counts summed, give
// the report of one process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ascii_tokenizer.h"
#include "cli_util.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

class MultipleChoiceMpi : public test::TempDirTest {};

TEST_F(MultipleChoiceMpi, TwoRanksReportAsOne) {
    const std::string model_dir = std::string(LMFORGE_FIXTURES_DIR) + "/hf/gpt2-f32";
    ASSERT_EQ(test::run_lmforge("import --hf " + model_dir + " --output " + path("ckpt")).status, 0);
    write("tok/tokenizer.json", test::ascii_tokenizer_json());
    std::string jsonl;
    for (int i = 0; i < 9; i++) {  // odd: the ranks get 5 and 4 items
        jsonl += nlohmann::json{{"ctx", "It was " + std::string(1 + i, 'o')},
                                {"endings", {"cold", "a dark night", "late", "calm seas"}}, {"label", i % 4}}.dump() + "\n";
    }
    const std::string items = write("items.jsonl", jsonl);
    const std::string args = "eval --checkpoint " + path("ckpt") + " --multiple-choice " + items + " --tokenizer " +
                             path("tok");
    const auto one = test::run_lmforge(args);
    ASSERT_EQ(one.status, 0) << one.err;
    const auto two = test::run_lmforge_mpi(2, args);
    ASSERT_EQ(two.status, 0) << two.err;
    const auto a = nlohmann::json::parse(one.out), b = nlohmann::json::parse(two.out);
    EXPECT_EQ(b["processes"], 2);
    EXPECT_EQ(b["items"], 9);
    EXPECT_EQ(b["accuracy"], a["accuracy"]);
    EXPECT_EQ(b["accuracy_norm"], a["accuracy_norm"]);
}

}  // namespace
}  // namespace lmforge
