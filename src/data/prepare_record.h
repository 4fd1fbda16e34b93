// prepare.json, the record `lmforge prepare` leaves in a data directory, as training and
// `lmforge data check` read it back. The directory is the user's (data.dir) and may have been
// edited or damaged since: each field is checked where it is read.
#pragma once

#include <cstdint>
#include <string>

namespace lmforge {

// The vocabulary the data in dir was made with; 0 if dir has no prepare.json or it names none.
// InputError naming the file if it is no JSON, or vocab_size no whole number in
// [1, kMaxShardVocab].
int64_t data_vocab_size(const std::string& dir);

// The id of <|endoftext|> that prepare recorded for the data in dir; -1 if it has none.
// InputError naming the file if the id lies outside the vocabulary.
int32_t data_eot_id(const std::string& dir);

}  // namespace lmforge
