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

}  // namespace
}  // namespace lmforge
