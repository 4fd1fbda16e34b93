#include "core/directory_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"

namespace lmforge {

DirectoryLock::DirectoryLock(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string path = dir + "/.lock";
    // Close-on-exec: a child process must not keep the lock alive after this one ends.
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        throw InputError(fmt::format("{}: cannot open the run directory's lock: {}", path, std::strerror(errno)),
                         "check the directory's permissions");
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        if (err == ENOSYS || err == EOPNOTSUPP || err == ENOLCK) {
            // A file system without locks (some NFS, FUSE or Lustre mounts): the run goes on
            // as it did before there was a lock, unguarded.
            log::warn("{}: this file system has no file locks ({}): a second run of this directory would not be "
                      "stopped",
                      dir, std::strerror(err));
            return;
        }
        char holder[32] = {};
        const ssize_t n = ::pread(fd_, holder, sizeof(holder) - 1, 0);
        ::close(fd_);
        fd_ = -1;
        if (err == EWOULDBLOCK) {
            const std::string pid = n > 0 ? std::string(holder, static_cast<size_t>(n)) : "";
            throw InputError(fmt::format("{}: in use by another lmforge process{}", dir,
                                         pid.empty() ? "" : fmt::format(" (pid {})", pid)),
                             "wait for it to end, or choose another run.dir");
        }
        throw InputError(fmt::format("{}: cannot lock: {}", path, std::strerror(err)));
    }
    // Who holds it, for the message above; the lock, not this text, is what counts.
    const std::string pid = std::to_string(::getpid());
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
        // The lock is held all the same; only the message would lack the pid.
    }
}

DirectoryLock::~DirectoryLock() {
    if (fd_ >= 0) ::close(fd_);
}

}  // namespace lmforge
