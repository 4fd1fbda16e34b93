// Token shards on disk, memory-mapped for reading:
//   llm.c     <name>_NNNNNN.bin: 256 int32 header (magic 20240520, version 1, token count,
//             zeros), then the tokens as uint16. What `lmforge prepare` writes.
//   nanoGPT   any other .bin: raw uint16 tokens, no header, unless it begins with a whole
//             llm.c header that counts its tokens exactly (llm.c's tiny_shakespeare_val.bin).
//   NumPy     .npy: a one-dimensional uint16 ('<u2') array.
// A name ending in _<digits>.bin must hold an llm.c header, so damage there is an error, not
// raw tokens.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/file_io.h"

namespace lmforge {

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr int64_t kShardHeaderInts = 256;
// Shards hold uint16 ids: the largest vocabulary `lmforge prepare` makes data for.
inline constexpr int64_t kMaxShardVocab = 65536;

enum class ShardFormat { Llmc, Raw, Npy };

ShardFormat shard_format_of(const std::string& path);

// Writes an llm.c shard atomically (temporary name, fsync, rename).
void write_shard(const std::string& path, std::span<const uint16_t> tokens);

class Shard {
public:
    // Maps and checks the file's structure; InputError naming the file and what is wrong.
    explicit Shard(const std::string& path);

    std::span<const uint16_t> tokens() const { return tokens_; }
    const std::string& path() const { return file_.path(); }
    ShardFormat format() const { return format_; }

    // InputError naming the file and the first offending token's position if any token is
    // >= vocab_size.
    void check_vocab(int64_t vocab_size) const;

private:
    MappedFile file_;
    ShardFormat format_;
    std::span<const uint16_t> tokens_;
};

}  // namespace lmforge
