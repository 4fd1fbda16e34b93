// core/file_io: directories published whole under the name they were asked for ("out/" is
// "out"), an old one replaced without ever going missing, and which paths lie inside which.
#include "core/file_io.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <sys/wait.h>
#include <unistd.h>

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

// What a killed process of this host left beside the output is removed by the next publish;
// a running process's, or another host's (also one whose name begins with ours), stays.
TEST_F(FileIo, TemporariesOfDeadProcessesAreRemovedOthersKept) {
    char host[256] = {};
    ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ASSERT_GT(dead, 0);
    int status = 0;
    ::waitpid(dead, &status, 0);  // reaped: its pid names no process now
    const std::string mine = std::string(".out.tmp-") + host + "-";
    write("." + mine.substr(1) + std::to_string(dead) + "/part.bin", "half");
    write("." + mine.substr(1) + "1/part.bin", "init is running");  // pid 1 lives
    write(".out.tmp-otherhost-" + std::to_string(dead) + "/part.bin", "another host's");
    // Host "<ours>-<dead>" writing as its pid 1: our prefix, then the dead pid, then more.
    const std::string longer = mine + std::to_string(dead) + "-1";
    write(longer + "/part.bin", "a host whose name extends ours");
    publish_directory(path("out"), [](const std::string& tmp) { write_text_atomic(tmp + "/a.txt", "new"); });
    std::vector<std::string> kept = {mine + "1", ".out.tmp-otherhost-" + std::to_string(dead), longer, "out"};
    std::sort(kept.begin(), kept.end());
    EXPECT_EQ(names(dir_.string()), kept);
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
