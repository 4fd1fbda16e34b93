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
#include <fstream>
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

std::string read_text_file(const std::string& path) {
    const MappedFile file(path);
    return {reinterpret_cast<const char*>(file.bytes().data()), file.size()};
}

void write_file_atomic(const std::string& path,
                       std::span<const std::span<const std::byte>> parts) {
    const std::filesystem::path target(path);
    const std::string tmp = (target.parent_path() / temporary_name(target.filename().string())).string();
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

void check_output(const std::string& flag, const std::string& output, const std::vector<std::string>& inputs,
                  bool overwrite) {
    namespace fs = std::filesystem;
    for (const std::string& input : inputs) {
        if (path_within(input, output)) {
            throw InputError(fmt::format("{} {} holds the input {}: it would be replaced", flag, output, input),
                             fmt::format("choose another {}", flag));
        }
        if (fs::is_directory(input) && path_within(output, input)) {
            throw InputError(fmt::format("{} {} lies inside the input {}", flag, output, input),
                             fmt::format("choose another {}, outside the inputs", flag));
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

constexpr const char* kTemporary = ".lmforge-tmp.";
constexpr const char* kSwappedOut = ".lmforge-old.";
constexpr const char* kTemporaryMarker = ".lmforge-temporary";  // in a temporary directory: "HOST PID"

std::string host_name() {
    char host[256] = {};
    return ::gethostname(host, sizeof(host) - 1) == 0 ? std::string(host) : std::string("host");
}

// The pid at the end of a temporary's name made on this host ("....HOST.PID"), or 0.
long temporary_pid(const std::string& n, const std::string& host) {
    if (n.rfind(kTemporary, 0) != 0 && n.rfind(kSwappedOut, 0) != 0) return 0;
    const size_t dot = n.rfind('.');
    const std::string owner = "." + host + ".";
    if (dot == std::string::npos || dot < owner.size() || n.compare(dot + 1 - owner.size(), owner.size(), owner) != 0) {
        return 0;  // another host's (or not one of ours): left alone
    }
    char* end = nullptr;
    const long pid = std::strtol(n.c_str() + dot + 1, &end, 10);
    return end != n.c_str() + dot + 1 && *end == '\0' ? pid : 0;
}

bool process_is_gone(long pid) { return pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// A directory temporary holds the marker that names its writer; a file temporary is its name.
bool marked_as(const std::filesystem::path& p, const std::string& host, long pid) {
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) return true;
    std::ifstream in(p / kTemporaryMarker);
    std::string h;
    long n = 0;
    return static_cast<bool>(in >> h >> n) && h == host && n == pid;
}

}  // namespace

std::string temporary_name(const std::string& name) {
    return fmt::format("{}{}.{}.{}", kTemporary, name, host_name(), ::getpid());
}

void remove_dead_temporaries(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const std::string host = host_name();
    for (const auto& e : fs::directory_iterator(dir.empty() ? "." : dir, ec)) {
        const long pid = temporary_pid(e.path().filename().string(), host);
        if (process_is_gone(pid) && marked_as(e.path(), host, pid)) fs::remove_all(e.path(), ec);
    }
}

namespace {

// Marks dir as this process's temporary: if the process is killed before dir is gone, the next
// writer there recognises it.
void mark_temporary(const std::filesystem::path& dir) {
    write_text_atomic((dir / kTemporaryMarker).string(), fmt::format("{} {}\n", host_name(), ::getpid()));
}

// Puts the finished directory tmp in the place of out. An old out is marked, then swapped out
// in one step (or, where the file system cannot swap, moved aside first), then removed.
void swap_into_place(const std::filesystem::path& tmp, const std::filesystem::path& out) {
    namespace fs = std::filesystem;
    if (!fs::exists(out)) {
        fs::rename(tmp, out);
        return;
    }
    mark_temporary(out);
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE) == 0) {
        std::error_code ignored;  // the new directory is in place: a leftover is no failure
        fs::remove_all(tmp, ignored);
        return;
    }
    if (errno != EINVAL && errno != ENOSYS) {
        const std::error_code error(errno, std::generic_category());
        fs::remove(out / kTemporaryMarker);
        throw fs::filesystem_error("rename", tmp, out, error);
    }
    const fs::path old = out.parent_path() / fmt::format("{}{}.{}.{}", kSwappedOut, out.filename().string(),
                                                         host_name(), ::getpid());
    fs::rename(out, old);
    fs::rename(tmp, out);
    fs::remove_all(old);
}

}  // namespace

void publish_directory(const std::string& dir, const std::function<void(const std::string& tmp)>& write) {
    namespace fs = std::filesystem;
    const fs::path out = directory_named(dir);
    remove_dead_temporaries(out.parent_path().string());
    const fs::path tmp = out.parent_path() / temporary_name(out.filename().string());
    try {
        fs::remove_all(tmp);
        fs::create_directories(tmp);
        mark_temporary(tmp);
        write(tmp.string());
        fs::remove(tmp / kTemporaryMarker);
        swap_into_place(tmp, out);
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
