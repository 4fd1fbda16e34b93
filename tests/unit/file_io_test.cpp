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

// A pid that names no process: a child's, once reaped.
pid_t dead_pid() {
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    int status = 0;
    ::waitpid(dead, &status, 0);
    return dead;
}

std::string this_host() {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    return host;
}

// What a killed process of this host left is removed by the next write there, and nothing
// else: not a running process's, not another host's (nor one whose name extends ours), not a
// temporary directory without its marker, and never a user's file, whatever it is called.
TEST_F(FileIo, OnlyTemporariesOfDeadProcessesOfThisHostAreRemoved) {
    const std::string host = this_host(), dead = std::to_string(dead_pid());
    const std::string ours = ".lmforge-tmp.x." + host + "." + dead;
    write(ours + "/.lmforge-temporary", host + " " + dead + "\n");
    write(".lmforge-old.x." + host + "." + dead + "/.lmforge-temporary", host + " " + dead + "\n");
    write(".lmforge-tmp.notes.txt." + host + "." + dead, "a killed atomic write");
    const std::vector<std::string> kept = {
        ".backup.old-2024/a.txt",
        ".lmforge-tmp.running." + host + ".1/.lmforge-temporary",   // pid 1 lives
        ".lmforge-tmp.y.otherhost." + dead + "/.lmforge-temporary",  // another host's
        ".lmforge-tmp.z." + host + "." + dead + "-1/a",               // its name does not end in a pid
        ".lmforge-tmp.nomarker." + host + "." + dead + "/a.txt",      // ours by name, but unmarked
        "checkpoints/notes.tmp", "thesis.tmp", ".out.tmp-" + host + "-" + dead + "/a.txt"};
    for (const std::string& f : kept) write(f, "the user's, or not ours to remove");
    publish_directory(path("out"), [](const std::string& tmp) { write_text_atomic(tmp + "/a.txt", "new"); });
    std::vector<std::string> want = {"out", "checkpoints", "thesis.tmp"};
    for (const std::string& f : kept) {
        const std::string top = f.substr(0, f.find('/'));
        if (std::find(want.begin(), want.end(), top) == want.end()) want.push_back(top);
    }
    std::sort(want.begin(), want.end());
    EXPECT_EQ(names(dir_.string()), want);
    EXPECT_EQ(names(path("out")), (std::vector<std::string>{"a.txt"}));  // the marker is not published
}

// An atomic write's temporary bears lmforge's name, not the target's plus ".tmp".
TEST_F(FileIo, AtomicWritesNeverTouchAFileNamedLikeTheTargetPlusTmp) {
    write("notes.txt.tmp", "the user's");
    write_text_atomic(path("notes.txt"), "ours");
    EXPECT_EQ(test::slurp(path("notes.txt.tmp")), "the user's");
    EXPECT_EQ(test::slurp(path("notes.txt")), "ours");
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
