// One writer per directory: a run directory written by two `lmforge train` processes at once
// would interleave checkpoints and logs, and the second's clean-up would delete the first's
// half-written files. The lock is flock(2) on DIR/.lock, so the kernel drops it when its
// process ends, however it ends: there is never a stale lock to remove by hand.
#pragma once

#include <string>

namespace lmforge {

class DirectoryLock {
public:
    // Creates DIR if needed and takes its lock; InputError naming DIR and the holder's process
    // id when another process holds it. On a file system without locks, a warning and no lock.
    explicit DirectoryLock(const std::string& dir);
    ~DirectoryLock();
    DirectoryLock(const DirectoryLock&) = delete;
    DirectoryLock& operator=(const DirectoryLock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace lmforge
