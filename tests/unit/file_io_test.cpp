// core/file_io: directories published whole under the name they were asked for ("out/" is
// "out"), an old one replaced without ever going missing, and which paths lie inside which.
#include "core/file_io.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "temp_dir.h"
#include "cli_util.h"
#include "test_util.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;

class FileIo : public test::TempDirTest {
protected:
    // The names in dir, hidden ones included.
    std::vector<std::string> names(const std::string& dir) {
        std::vector<std::string> out;
        for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
        std::sort(out.begin(), out.end());
        return out;
    }
};

TEST_F(FileIo, ADirectoryNamedWithATrailingSlashIsPublishedAsItself) {
    const auto fill = [](const std::string& text) {
        return [text](const std::string& tmp) { write_text_atomic(tmp + "/a.txt", text); };
    };
    publish_directory(path("out") + "/", fill("first"));
    EXPECT_EQ(test::slurp(path("out/a.txt")), "first");
    publish_directory(path("out") + "//", fill("second"));  // replaces it
    EXPECT_EQ(test::slurp(path("out/a.txt")), "second");
    publish_directory(path("out") + "/.", fill("third"));
    EXPECT_EQ(test::slurp(path("out/a.txt")), "third");
    EXPECT_EQ(names(path("out")), (std::vector<std::string>{"a.txt"}));
    EXPECT_EQ(names(dir_.string()), (std::vector<std::string>{"out"})) << "nothing left beside it";
    EXPECT_EQ(directory_named(path("out") + "/"), fs::path(path("out")));
    EXPECT_NE(test::input_error_of([] { (void)directory_named("/"); }).find("/: not a directory to write"),
              std::string::npos);
}

TEST_F(FileIo, AFailedWriteLeavesTheOldDirectoryAndNoTemporary) {
    publish_directory(path("out"), [](const std::string& tmp) { write_text_atomic(tmp + "/a.txt", "old"); });
    EXPECT_THROW(publish_directory(path("out"),
                                   [](const std::string& tmp) {
                                       write_text_atomic(tmp + "/a.txt", "half");
                                       throw InputError("stopped half way");
                                   }),
                 InputError);
    EXPECT_EQ(test::slurp(path("out/a.txt")), "old");
    EXPECT_EQ(names(dir_.string()), (std::vector<std::string>{"out"}));
}

TEST_F(FileIo, PathWithinResolvesDotsSlashesAndLinks) {
    fs::create_directories(path("a/b"));
    fs::create_directory_symlink(path("a/b"), path("link"));
    EXPECT_TRUE(path_within(path("a/b"), path("a")));
    EXPECT_TRUE(path_within(path("a"), path("a") + "/"));
    EXPECT_TRUE(path_within(path("a/b/../b/c"), path("a/b")));
    EXPECT_TRUE(path_within(path("link/x"), path("a")));
    EXPECT_FALSE(path_within(path("ab"), path("a")));
    EXPECT_FALSE(path_within(path("a"), path("a/b")));
}

}  // namespace
}  // namespace lmforge
