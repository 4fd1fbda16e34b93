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

// Writes `parts` one after another to path.tmp, fsyncs, renames over path and fsyncs the
// directory. On failure removes the temporary file and throws Error naming the path.
void write_file_atomic(const std::string& path, std::span<const std::span<const std::byte>> parts);
// The same for one piece of text.
void write_text_atomic(const std::string& path, std::string_view text);

// The directory a path names, as publish_directory writes it: "out/" and "out/." are "out",
// "." is the working directory by its name; InputError for "/".
std::filesystem::path directory_named(const std::string& dir);

// Whether `path` is `dir` or lies inside it, after resolving both (symbolic links, "..", a
// trailing "/"): a directory about to be replaced must not hold what is being read.
bool path_within(const std::string& path, const std::string& dir);

// Refuses (InputError) an output directory that publish_directory must not replace: one that
// holds any of `inputs` or the working directory, always; one that exists, unless overwrite.
// `flag` names the option in the messages ("--output").
void check_output_directory(const std::string& flag, const std::string& output,
                            const std::vector<std::string>& inputs, bool overwrite);

// Writes a whole directory atomically: write(tmp) fills a fresh sibling of `dir`, which then
// replaces `dir` (an existing one is swapped with it in one rename and then removed, so `dir`
// never goes missing). Readers see the old directory or the new one, never a part. On failure
// the sibling is removed and the exception goes on (filesystem errors become Error naming
// `dir`). Siblings that processes of this host left when they were killed are removed first.
void publish_directory(const std::string& dir, const std::function<void(const std::string& tmp)>& write);

}  // namespace lmforge
