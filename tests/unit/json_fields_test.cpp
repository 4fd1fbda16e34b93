// json_int (io/json_fields.h): a whole number in [lo, hi], or an InputError naming the file,
// the field and the value.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "io/json_fields.h"
#include "test_util.h"

namespace lmforge {
namespace {

std::string refusal(const std::string& value, int64_t lo, int64_t hi) {
    const auto j = nlohmann::json::parse(R"({"n": )" + value + "}");
    return test::input_error_of([&] { json_int(j, "n", lo, hi, "f.json"); });
}

TEST(JsonInt, ANumberBelowAPositiveLowerBoundIsRefused) {
    // 0 and 2 are held as unsigned, which json_int once compared with hi alone.
    EXPECT_NE(refusal("0", 1, 100).find("f.json: \"n\" is 0, not a whole number in [1, 100]"), std::string::npos);
    EXPECT_NE(refusal("2", 3, 100).find("\"n\" is 2"), std::string::npos);
    EXPECT_NE(refusal("-1", 0, 100).find("\"n\" is -1"), std::string::npos);
    EXPECT_EQ(json_int(nlohmann::json::parse(R"({"n": 1})"), "n", 1, 100, "f.json"), 1);
}

TEST(JsonInt, OnlyWholeNumbersInRangeAreTaken) {
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    EXPECT_NE(refusal("101", 1, 100).find("\"n\" is 101"), std::string::npos);
    EXPECT_NE(refusal("9223372036854775808", 0, kMax).find("\"n\" is 9223372036854775808"), std::string::npos);
    EXPECT_NE(refusal("1.5", 0, 100).find("\"n\" is 1.5"), std::string::npos);
    EXPECT_NE(refusal("\"3\"", 0, 100).find("\"n\" is \"3\""), std::string::npos);
    EXPECT_NE(refusal("null", 0, 100).find("\"n\" is null"), std::string::npos);
    EXPECT_EQ(json_int(nlohmann::json::parse(R"({"n": 9223372036854775807})"), "n", 0, kMax, "f.json"), kMax);
    EXPECT_EQ(json_int(nlohmann::json::parse(R"({"n": -5})"), "n", -10, 0, "f.json"), -5);
}

}  // namespace
}  // namespace lmforge
