// io/safetensors: round trip, and every kind of damaged file refused with its name.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;

class Safetensors : public test::TempDirTest {
protected:
    void write_raw(const std::string& p, const std::string& header, size_t data_bytes) {
        std::ofstream out(p, std::ios::binary);
        const uint64_t n = header.size();
        out.write(reinterpret_cast<const char*>(&n), 8);
        out << header << std::string(data_bytes, '\0');
    }
    std::string error_of(const std::string& p) {
        try {
            SafetensorsReader r(p);
        } catch (const InputError& e) {
            return e.what();
        }
        return "no error";
    }
};

TEST_F(Safetensors, RoundTripsTensorsAndMetadata) {
    SafetensorsWriter w;
    const std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
    const std::vector<int32_t> b = {7, -100};
    w.add("a", Dtype::F32, {2, 3}, a.data());
    w.add("b", Dtype::I32, {2}, b.data());
    w.add_metadata("format", "pt");
    w.write(path("x.safetensors"));
    EXPECT_FALSE(fs::exists(path("x.safetensors.tmp")));
    SafetensorsReader r(path("x.safetensors"));
    EXPECT_EQ(r.names(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(r.info("a").shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(r.read_f32("a"), a);
    EXPECT_EQ(r.read_i32("b"), b);
    EXPECT_EQ(r.metadata().at("format"), "pt");
    std::vector<float> wrong(5);
    EXPECT_THROW(r.read("a", wrong), InputError);
    EXPECT_THROW(r.read_f32("b"), InputError);
    EXPECT_THROW(r.info("c"), InputError);
}

TEST_F(Safetensors, RefusesDamagedFilesNamingThem) {
    const std::string p = path("bad.safetensors");
    std::ofstream(p, std::ios::binary) << "abc";
    EXPECT_NE(error_of(p).find(p), std::string::npos);
    EXPECT_NE(error_of(p).find("shorter than"), std::string::npos);
    write_raw(p, "{not json", 0);
    EXPECT_NE(error_of(p).find("not JSON"), std::string::npos);
    write_raw(p, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4);
    EXPECT_NE(error_of(p).find("outside the data section"), std::string::npos);
    write_raw(p, R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8);
    EXPECT_NE(error_of(p).find("bytes for shape"), std::string::npos);
    write_raw(p, R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8);
    EXPECT_NE(error_of(p).find("unsupported dtype"), std::string::npos);
    write_raw(p, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12);
    EXPECT_NE(error_of(p).find("overlap"), std::string::npos);
    EXPECT_NE(error_of(path("missing")).find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace lmforge
