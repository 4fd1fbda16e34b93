// The best rates measured on this machine, kept between runs (backend/best_figures.h): the
// record only ever rises, holds per figure and per CPU, and a damaged or unwritable one does
// not stop a run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/best_figures.h"
#include "core/sysinfo.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

class BestFigures : public test::TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        const char* home = std::getenv("LMFORGE_HOME");
        saved_ = home != nullptr ? std::optional<std::string>(home) : std::nullopt;
        ::setenv("LMFORGE_HOME", path("home").c_str(), 1);
    }
    void TearDown() override {
        if (saved_) ::setenv("LMFORGE_HOME", saved_->c_str(), 1);
        if (!saved_) ::unsetenv("LMFORGE_HOME");
        TempDirTest::TearDown();
    }
    nlohmann::json record() const {
        std::ifstream in(backend::best_figures_path());
        return nlohmann::json::parse(in);
    }
    std::optional<std::string> saved_;
};

TEST_F(BestFigures, TheRecordOnlyRises) {
    EXPECT_EQ(backend::best_figures_path(), path("home") + "/machine-figures.json");
    EXPECT_EQ(backend::best_figure("peak", 500.0), 500.0);  // the first: no record yet
    EXPECT_EQ(backend::best_figure("peak", 1000.0), 1000.0);
    EXPECT_EQ(backend::best_figure("peak", 540.0), 1000.0);  // a slow minute
    EXPECT_EQ(record()[cpu_signature()]["peak"], 1000.0);
}

TEST_F(BestFigures, EachFigureAndEachCpuHasItsOwn) {
    backend::best_figure("memory GB/s, 2 threads", 90.0);
    EXPECT_EQ(backend::best_figure("memory GB/s, 1 threads", 40.0), 40.0);
    // Another CPU's record, written by hand, is kept and not read for this one.
    nlohmann::json j = record();
    j["another CPU"]["memory GB/s, 2 threads"] = 500.0;
    write("home/machine-figures.json", j.dump());
    EXPECT_EQ(backend::best_figure("memory GB/s, 2 threads", 50.0), 90.0);
    EXPECT_EQ(record()["another CPU"]["memory GB/s, 2 threads"], 500.0);
}

TEST_F(BestFigures, ADamagedRecordIsStartedAfresh) {
    write("home/machine-figures.json", "{ not json");
    EXPECT_EQ(backend::best_figure("peak", 300.0), 300.0);
    EXPECT_EQ(record()[cpu_signature()]["peak"], 300.0);
    write("home/machine-figures.json", R"({")" + cpu_signature() + R"(": {"peak": "fast"}})");
    EXPECT_EQ(backend::best_figure("peak", 200.0), 200.0);
}

TEST_F(BestFigures, AnUnwritableHomeLeavesTheMeasurement) {
    write("home", "a file where the directory should be");
    EXPECT_EQ(backend::best_figure("peak", 700.0), 700.0);
    EXPECT_FALSE(std::filesystem::is_directory(path("home")));
}

TEST_F(BestFigures, NoFigureIsKeptForAFailedMeasurement) {
    EXPECT_EQ(backend::best_figure("peak", 0.0), 0.0);
    EXPECT_FALSE(std::filesystem::exists(backend::best_figures_path()));
}

TEST(CpuSignature, NamesTheModelAndItsFlags) {
    const std::string s = cpu_signature();
    EXPECT_EQ(s.rfind(cpu_model() + " | family ", 0), 0u) << s;
    EXPECT_NE(s.find(" CPUs | flags "), std::string::npos) << s;
    EXPECT_EQ(s, cpu_signature());
}

}  // namespace
}  // namespace lmforge
