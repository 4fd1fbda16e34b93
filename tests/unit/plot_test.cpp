// train/plot: the loss plots from a run's metrics.jsonl as lmforge writes it, also while a run is
// writing it: a NaN loss (written as null) is a gap, a half-written last line is not read yet,
// and the run's name is escaped in the SVG.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "temp_dir.h"
#include "cli_util.h"
#include "test_util.h"
#include "train/plot.h"

namespace lmforge {
namespace {

class Plots : public test::TempDirTest {};

TEST_F(Plots, NullValuesAndAHalfWrittenLastLineAreNoError) {
    write("a&b<c>/metrics.jsonl",
          "{\"step\":0,\"loss\":4.1}\n{\"step\":0,\"val_loss\":4.2}\n{\"step\":1,\"loss\":null}\n"
          "{\"step\":2,\"loss\":3.9}\n{\"step\":3,\"lo");
    const std::vector<std::string> files = write_loss_plots(path("a&b<c>"));
    ASSERT_EQ(files.size(), 2u);
    const std::string svg = test::slurp(files[0]);
    EXPECT_NE(svg.find(">a&amp;b&lt;c&gt;</text>"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("a&b"), std::string::npos);
    EXPECT_TRUE(std::filesystem::file_size(files[1]) > 0);
    // A damaged line before the last is still named.
    write("bad/metrics.jsonl", "{\"step\":0,\"loss\":4.1}\nnot json\n{\"step\":2,\"loss\":3.9}\n");
    EXPECT_NE(test::input_error_of([&] { write_loss_plots(path("bad")); }).find("metrics.jsonl:2: not a metrics line"),
              std::string::npos);
}

// eval.multiple_choice's accuracies get a panel of their own below the losses: the picture
// doubles in height, and the SVG holds both charts.
TEST_F(Plots, MultipleChoiceAccuracyIsASecondPanel) {
    write("run/metrics.jsonl",
          "{\"step\":0,\"loss\":4.1}\n{\"step\":0,\"val_loss\":4.2}\n"
          "{\"step\":0,\"mc_accuracy\":0.25,\"mc_accuracy_norm\":0.3,\"mc_correct\":1,\"mc_correct_norm\":1,"
          "\"mc_items\":4}\n{\"step\":1,\"loss\":3.9}\n"
          "{\"step\":2,\"mc_accuracy\":0.5,\"mc_accuracy_norm\":0.75,\"mc_correct\":2,\"mc_correct_norm\":3,"
          "\"mc_items\":4}\n");
    const std::vector<std::string> files = write_loss_plots(path("run"));
    const std::string svg = test::slurp(files[0]);
    EXPECT_NE(svg.find("height=\"1040\""), std::string::npos) << svg.substr(0, 200);
    EXPECT_NE(svg.find("translate(0,520)"), std::string::npos);
    EXPECT_NE(svg.find(">multiple choice</text>"), std::string::npos);
    EXPECT_NE(svg.find(">acc_norm</text>"), std::string::npos);
    // The PNG's header: width and height, big-endian, after the signature and IHDR's length and type.
    const std::string png = test::slurp(files[1]);
    ASSERT_GT(png.size(), 24u);
    const auto u32 = [&](size_t at) {
        return (static_cast<uint32_t>(static_cast<uint8_t>(png[at])) << 24) |
               (static_cast<uint32_t>(static_cast<uint8_t>(png[at + 1])) << 16) |
               (static_cast<uint32_t>(static_cast<uint8_t>(png[at + 2])) << 8) | static_cast<uint8_t>(png[at + 3]);
    };
    EXPECT_EQ(u32(16), 900u);
    EXPECT_EQ(u32(20), 1040u);
    // Without them, one panel as before.
    write("plain/metrics.jsonl", "{\"step\":0,\"loss\":4.1}\n{\"step\":1,\"loss\":3.9}\n");
    const std::string plain_png = test::slurp(write_loss_plots(path("plain"))[1]);
    EXPECT_EQ(static_cast<uint8_t>(plain_png[22]) * 256 + static_cast<uint8_t>(plain_png[23]), 520);
    EXPECT_EQ(test::slurp(path("plain/plots/loss.svg")).find("multiple choice"), std::string::npos);
}

}  // namespace
}  // namespace lmforge
