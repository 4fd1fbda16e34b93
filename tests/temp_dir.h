// A fresh directory for each test, removed afterwards, and a way to write files into it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace lmforge::test {

class TempDirTest : public ::testing::Test {
public:
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    // Writes bytes to name (parent directories created) and returns its path.
    std::string write(const std::string& name, const std::string& bytes) {
        std::filesystem::create_directories((dir_ / name).parent_path());
        std::ofstream(dir_ / name, std::ios::binary) << bytes;
        return path(name);
    }

protected:
    void SetUp() override {
        // Unique per process and test: ctest runs tests as parallel processes.
        dir_ = std::filesystem::temp_directory_path() /
               ("lmforge_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::filesystem::path dir_;
};

}  // namespace lmforge::test
