// Checked file I/O: reading whole files, memory-mapping them read-only, and writing files
// atomically (temporary name, fsync, rename), so a reader never sees half a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>
#include <string_view>

namespace lmforge {

// A read-only memory map of a whole file. Throws InputError naming the path if it cannot be
// opened (missing, a directory, unreadable).
class MappedFile {
public:
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(MappedFile&& o) noexcept;
    MappedFile& operator=(MappedFile&&) = delete;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::span<const std::byte> bytes() const { return {data_, size_}; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    const std::byte* data_ = nullptr;
    size_t size_ = 0;
};

// A whole file as text; InputError naming the path if it cannot be read.
std::string read_text_file(const std::string& path);

// Writes `parts` one after another to a temporary beside path (temporary_name), fsyncs,
// renames over path and fsyncs the directory. On failure removes the temporary and throws
// Error naming the path.
void write_file_atomic(const std::string& path, std::span<const std::span<const std::byte>> parts);
// The same for one piece of text.
void write_text_atomic(const std::string& path, std::string_view text);

// The directory a path names, as publish_directory writes it: "out/" and "out/." are "out",
// "." is the working directory by its name; InputError for "/".
std::filesystem::path directory_named(const std::string& dir);

// Whether `path` is `dir` or lies inside it, after resolving both (symbolic links, "..", a
// trailing "/"): a directory about to be replaced must not hold what is being read.
bool path_within(const std::string& path, const std::string& dir);

// Refuses (InputError) an output, a file or a directory, that a command must not write: one
// that holds any of `inputs` or the working directory, or lies inside an input, always; one that
// exists, unless overwrite. `flag` names the option in the messages ("--output"). Every
// command that writes a user-named output calls it.
void check_output(const std::string& flag, const std::string& output, const std::vector<std::string>& inputs,
                  bool overwrite);

// The name of a temporary that this process writes in place of `name` (a file or directory
// of the same directory): ".lmforge-tmp.NAME.HOST.PID", a name no user would choose, which
// says whose it is.
std::string temporary_name(const std::string& name);
// Removes from `dir` the temporaries (temporary_name's, and directories' ".lmforge-old." twins)
// of processes of this host that are gone: a killed write's leftovers. Nothing else: not a
// running process's, not another host's (on a shared file system), and not a user's file,
// whatever its name. A temporary directory must also hold its marker (publish_directory's).
void remove_dead_temporaries(const std::string& dir);

// Writes a whole directory atomically: write(tmp) fills a fresh sibling of `dir`, which then
// replaces `dir` (an existing one is swapped with it in one rename and then removed, so `dir`
// never goes missing). Readers see the old directory or the new one, never a part. On failure
// the sibling is removed and the exception goes on (filesystem errors become Error naming
// `dir`). Temporaries that killed processes of this host left beside `dir` are removed first.
void publish_directory(const std::string& dir, const std::function<void(const std::string& tmp)>& write);

}  // namespace lmforge
