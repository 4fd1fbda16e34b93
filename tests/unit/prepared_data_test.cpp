// prepare.json as training and `lmforge data check` read it back from a data directory the
// user names: a file that is no JSON, or a vocabulary or <|endoftext|> id that is no whole
// number in range, is refused naming the file and field. (Found by fuzz/prepared_data_fuzz.cpp.)
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "data/prepare_record.h"
#include "data/shard.h"
#include "data/shard_check.h"
#include "temp_dir.h"
#include "test_util.h"
#include "train/model_setup.h"

namespace lmforge {
namespace {

class PreparedData : public test::TempDirTest {
protected:
    std::string data_with(const std::string& prepare_json) {
        write("data/prepare.json", prepare_json);
        const std::vector<uint16_t> tokens = {1, 2, 3};
        write_shard(path("data/train_000000.bin"), tokens);
        return path("data");
    }
    int64_t vocab_of(const std::string& dir) {
        TrainConfig c;
        c.data.dir = dir;
        return tokenizer_vocab_size(c);
    }
};

TEST_F(PreparedData, AVocabularyOutOfRangeIsRefused) {
    // 2^63 - 1 sized a vector of counts (std::length_error escaped); "50257" threw nlohmann's
    // type_error; 1.5 was read as 1; 0 and 65537 (past the uint16 ids of shards) were taken.
    for (const std::string value : {"9223372036854775807", "\"50257\"", "1.5", "0", "65537"}) {
        const std::string dir = data_with(R"({"vocab_size": )" + value + "}");
        const std::string want = path("data/prepare.json") + ": \"vocab_size\" is " + value;
        EXPECT_NE(test::input_error_of([&] { check_shards(dir); }).find(want), std::string::npos) << value;
        EXPECT_NE(test::input_error_of([&] { vocab_of(dir); }).find(want), std::string::npos) << value;
    }
    const std::string dir = data_with(R"({"vocab_size": 65536})");
    EXPECT_EQ(check_shards(dir).vocab_size, 65536);
    EXPECT_EQ(vocab_of(dir), 65536);
}

TEST_F(PreparedData, AnEndOfTextIdOutsideTheVocabularyIsRefused) {
    // 2^40 was cut to 32 bits without a word; 100 lies past a vocabulary of 100.
    for (const std::string value : {"1099511627776", "100", "-1"}) {
        const std::string dir = data_with(R"({"vocab_size": 100, "eot_id": )" + value + "}");
        EXPECT_NE(test::input_error_of([&] { data_eot_id(dir); })
                      .find(path("data/prepare.json") + ": \"eot_id\" is " + value),
                  std::string::npos)
            << value;
    }
    EXPECT_EQ(data_eot_id(data_with(R"({"vocab_size": 100, "eot_id": 99})")), 99);
    EXPECT_EQ(data_eot_id(data_with(R"({"vocab_size": 100, "eot_id": null})")), -1);
}

TEST_F(PreparedData, APrepareJsonThatIsNoJsonIsRefused) {
    // It was ignored: `data check` then checked no token, and training said there was no
    // prepare.json to take the vocabulary from.
    const std::string dir = data_with(R"({"vocab_size": 100,)");
    const std::string want = path("data/prepare.json") + ": not valid JSON";
    EXPECT_NE(test::input_error_of([&] { check_shards(dir); }).find(want), std::string::npos);
    EXPECT_NE(test::input_error_of([&] { vocab_of(dir); }).find(want), std::string::npos);
    EXPECT_NE(test::input_error_of([&] { data_eot_id(dir); }).find(want), std::string::npos);
}

TEST_F(PreparedData, NoPrepareJsonLeavesTheVocabularyUnknown) {
    std::filesystem::create_directories(path("data"));
    write_shard(path("data/train_000000.bin"), std::vector<uint16_t>{1, 2, 3});
    EXPECT_EQ(check_shards(path("data")).vocab_size, 0);
    EXPECT_EQ(data_eot_id(path("data")), -1);
    EXPECT_NE(test::input_error_of([&] { vocab_of(path("data")); }).find("no prepare.json"), std::string::npos);
}

}  // namespace
}  // namespace lmforge
