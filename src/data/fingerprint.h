// A fingerprint of the files a run trains on, for its checkpoints: a resume on other data
// (shards prepared again, a file replaced) is refused instead of going on with a data position
// that points into something else. Cheap on any size of corpus: each file's name and size with
// its first and last MiB, hashed (SHA-256), rather than every byte.
#pragma once

#include <string>
#include <vector>

namespace lmforge {

// 16 hex digits; InputError if a file cannot be read.
std::string data_fingerprint(const std::vector<std::string>& paths);

}  // namespace lmforge
