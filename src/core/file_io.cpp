#include "core/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.h"

namespace lmforge {

namespace {

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, const std::byte* p, size_t n, const std::string& path) {
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            throw Error(fmt::format("{}: write failed: {}", path, errno_text()),
                        "check free disk space and permissions");
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
}

// Makes a rename into path's directory durable: fsync the directory itself.
void sync_parent(const std::string& path) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        throw InputError(fmt::format("{}: cannot open: {}", path, errno_text()),
                         "check the path");
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw InputError(fmt::format("{}: not a regular file", path), "check the path");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            ::close(fd);
            throw Error(fmt::format("{}: mmap failed: {}", path, errno_text()));
        }
        data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

MappedFile::~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

void write_file_atomic(const std::string& path,
                       std::span<const std::span<const std::byte>> parts) {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        throw Error(fmt::format("{}: cannot create: {}", tmp, errno_text()),
                    "check that the directory exists and is writable");
    }
    try {
        for (const auto& part : parts) write_all(fd, part.data(), part.size(), tmp);
        if (::fsync(fd) != 0) {
            throw Error(fmt::format("{}: fsync failed: {}", tmp, errno_text()),
                        "check free disk space");
        }
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        ::unlink(tmp.c_str());
        throw Error(fmt::format("{}: rename failed: {}", path, errno_text()));
    }
    sync_parent(path);
}

std::filesystem::path directory_named(const std::string& dir) {
    namespace fs = std::filesystem;
    fs::path p = fs::path(dir).lexically_normal();  // "a/./b/" is "a/b/"
    if (p.filename() == "." || p.filename() == "..") p = fs::absolute(p).lexically_normal();
    if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "out/" is "out"
    if (!p.has_filename()) throw InputError(fmt::format("{}: not a directory to write", dir), "name a directory below /");
    return p;
}

bool path_within(const std::string& path, const std::string& dir) {
    namespace fs = std::filesystem;
    const fs::path inner = fs::weakly_canonical(fs::absolute(path));
    const fs::path outer = fs::weakly_canonical(fs::absolute(directory_named(dir)));
    auto i = inner.begin();
    for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
        if (i == inner.end() || *i != *o) return false;
    }
    return true;
}

void check_output_directory(const std::string& flag, const std::string& output,
                            const std::vector<std::string>& inputs, bool overwrite) {
    namespace fs = std::filesystem;
    for (const std::string& input : inputs) {
        if (path_within(input, output)) {
            throw InputError(fmt::format("{} {} holds the input {}: it would be replaced", flag, output, input),
                             fmt::format("choose another {}", flag));
        }
    }
    if (path_within(fs::current_path().string(), output)) {
        throw InputError(fmt::format("{} {} holds the working directory: it would be replaced", flag, output),
                         fmt::format("choose another {}", flag));
    }
    if (fs::exists(output) && !overwrite) {
        throw InputError(fmt::format("{} {}: already exists", flag, output),
                         fmt::format("choose another {} or pass --overwrite to replace it", flag));
    }
}

namespace {

std::string host_name() {
    char host[256] = {};
    return ::gethostname(host, sizeof(host) - 1) == 0 ? std::string(host) : std::string("host");
}

// The siblings of `out` that publish_directory names for a process of this host: ".NAME.tmp-
// HOST-PID" while it writes, ".NAME.old-HOST-PID" while it swaps. Those of processes that are
// gone (killed during a prepare or a data get) are removed; another host's, or a running
// process's, are left alone.
void remove_dead_siblings(const std::filesystem::path& out, const std::string& name, const std::string& host) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
    for (const auto& e : fs::directory_iterator(parent, ec)) {
        const std::string n = e.path().filename().string();
        for (const char* kind : {".tmp-", ".old-"}) {
            const std::string prefix = "." + name + kind + host + "-";
            if (n.rfind(prefix, 0) != 0) continue;
            // The whole rest must be the pid: host "node" is a prefix of "node-7"'s names too.
            const char* digits = n.c_str() + prefix.size();
            char* end = nullptr;
            const long pid = std::strtol(digits, &end, 10);
            if (end == digits || *end != '\0') continue;
            if (pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
                fs::remove_all(e.path(), ec);
            }
        }
    }
}

}  // namespace

void publish_directory(const std::string& dir, const std::function<void(const std::string& tmp)>& write) {
    namespace fs = std::filesystem;
    const fs::path out = directory_named(dir);
    const std::string name = out.filename().string(), host = host_name();
    remove_dead_siblings(out, name, host);
    const fs::path tmp = out.parent_path() / fmt::format(".{}.tmp-{}-{}", name, host, ::getpid());
    try {
        fs::remove_all(tmp);
        fs::create_directories(tmp);
        write(tmp.string());
        if (!fs::exists(out)) {
            fs::rename(tmp, out);
        } else if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE) == 0) {
            std::error_code ignored;  // the new directory is in place: a leftover is no failure
            fs::remove_all(tmp, ignored);  // the old directory, swapped out in one step
        } else if (errno == EINVAL || errno == ENOSYS) {
            // A file system that cannot swap: move the old one aside, then the new one in.
            const fs::path old = out.parent_path() / fmt::format(".{}.old-{}-{}", name, host, ::getpid());
            fs::rename(out, old);
            fs::rename(tmp, out);
            fs::remove_all(old);
        } else {
            throw fs::filesystem_error("rename", tmp, out, std::error_code(errno, std::generic_category()));
        }
        sync_parent(out.string());
    } catch (const fs::filesystem_error& e) {
        fs::remove_all(tmp);
        throw Error(fmt::format("{}: cannot write: {}", dir, e.code().message()),
                    "check that its parent is writable and that the disk has room");
    } catch (...) {
        fs::remove_all(tmp);
        throw;
    }
}

void write_text_atomic(const std::string& path, std::string_view text) {
    const std::span<const std::byte> parts[] = {std::as_bytes(std::span(text.data(), text.size()))};
    write_file_atomic(path, parts);
}

}  // namespace lmforge
