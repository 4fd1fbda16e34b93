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
    for (const auto& e : fs::directory_iterator(dir_)) {  // no temporary left beside it
        EXPECT_EQ(e.path().filename().string().rfind(".lmforge-tmp.", 0), std::string::npos) << e.path();
    }
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

TEST_F(Safetensors, TensorsOfOtherDtypesAreListedAndRefusedOnlyWhenRead) {
    // A BOOL mask beside the weights (as older GPT-2 files keep attn.bias): the file opens,
    // the float tensor reads, and reading the mask as floats names both dtypes.
    const std::string p = path("mixed.safetensors");
    write_raw(p, R"({"mask":{"dtype":"BOOL","shape":[4],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8);
    const SafetensorsReader r(p);
    EXPECT_EQ(r.info("mask").dtype, Dtype::BOOL);
    EXPECT_EQ(r.read_f32("w").size(), 1u);
    try {
        (void)r.read_f32("mask");
        FAIL() << "a BOOL tensor was read as F32";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("'mask' is BOOL with 4 elements, expected F32"), std::string::npos) << e.what();
    }
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
    // The format wants the data section tiled exactly: a hole before, between or after.
    write_raw(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8);
    EXPECT_NE(error_of(p).find("bytes 0..4 of the data section belong to no tensor"), std::string::npos);
    write_raw(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12);
    EXPECT_NE(error_of(p).find("bytes 4..8"), std::string::npos);
    write_raw(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8);
    EXPECT_NE(error_of(p).find("bytes 4..8"), std::string::npos);
    // A shape whose byte count overflows 64 bits is refused, not wrapped to match.
    write_raw(p, R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0);
    EXPECT_NE(error_of(p).find("bytes for shape [4611686018427387904] of F32"), std::string::npos);
    write_raw(p, R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0);
    EXPECT_NE(error_of(p).find("bytes for shape"), std::string::npos);
    // Whole numbers only, as the format's own reader wants: 2.5 was cut to 2 and accepted.
    write_raw(p, R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8);
    EXPECT_NE(error_of(p).find("tensor 'a': shape is not a list of integers"), std::string::npos);
    write_raw(p, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0.9,8.9]}})", 8);
    EXPECT_NE(error_of(p).find("tensor 'a': data_offsets is not a list of integers"), std::string::npos);
    EXPECT_NE(error_of(path("missing")).find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace lmforge
