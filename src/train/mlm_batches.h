// Masked-LM batches for an encoder (BERT's pretraining objective): token shards cut into
// pieces at document boundaries (<|endoftext|>) and every seq_len - 2 tokens, each framed as
// [CLS] piece [SEP]; a batch is padded only to its longest piece (dynamic padding); then, as
// BERT (and transformers' DataCollatorForLanguageModeling): each real token is chosen with
// probability 15%, and a chosen token becomes [MASK] 80% of the time, a random ordinary token
// 10%, and stays itself 10%; the model predicts the chosen tokens' original ids. Each row is
// masked with random numbers of its own, drawn from (seed, the row's key): a row's masks are
// the same whichever process, micro-batch or resumed run draws them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/rng.h"
#include "model/batch.h"
#include "tokenizer/encoder_specials.h"

namespace lmforge {

struct MaskingOptions {
    double choose = 0.15;     // of the real tokens
    double to_mask = 0.8;     // of the chosen: [MASK]
    double to_random = 0.1;   // of the chosen: a random ordinary token (the rest stay)
};

// Pieces of at most max_piece tokens from a token stream; eot (or -1) separates documents.
std::vector<std::vector<int32_t>> cut_pieces(std::span<const uint16_t> tokens, int32_t eot, int64_t max_piece);

// What a masked-LM batch is made with, besides its pieces.
struct MlmFraming {
    EncoderSpecials specials;
    int64_t ordinary_vocab = 0;  // ids [0, ordinary_vocab) a random replacement draws from
    int64_t max_T = 0;
    MaskingOptions masking;
    uint64_t seed = 0;
};

// Frames pieces[idx[b]] as [CLS] piece [SEP] + [PAD]s to the longest, rounded up to 16 and at
// most max_T, with lengths, then masks row b with the random numbers of keys[b]: inputs,
// targets (the original id where chosen, kIgnoreIndex elsewhere) and lengths of `batch`.
void make_mlm_batch(Batch& batch, const std::vector<std::vector<int32_t>>& pieces, std::span<const int64_t> idx,
                    std::span<const uint64_t> keys, const MlmFraming& f);

// The masking alone, of row b of a framed batch: specials are never chosen.
void mask_row(Batch& batch, int64_t b, const EncoderSpecials& sp, int64_t ordinary_vocab, const MaskingOptions& opts,
              Rng& rng);

// The tokens of every shard of one split ("train", "val") in a prepared data directory, in
// name order; InputError if there is none.
std::vector<uint16_t> read_split_tokens(const std::string& dir, const std::string& split);

}  // namespace lmforge
