#include "train/mlm_batches.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "data/dataloader.h"
#include "data/shard.h"
#include "kernels/crossentropy.h"

namespace lmforge {

std::vector<std::vector<int32_t>> cut_pieces(std::span<const uint16_t> tokens, int32_t eot, int64_t max_piece) {
    std::vector<std::vector<int32_t>> pieces;
    std::vector<int32_t> piece;
    const auto flush = [&] {
        if (!piece.empty()) pieces.push_back(std::move(piece));
        piece.clear();
    };
    for (const uint16_t t : tokens) {
        if (static_cast<int32_t>(t) == eot) {
            flush();
            continue;
        }
        piece.push_back(t);
        if (static_cast<int64_t>(piece.size()) == max_piece) flush();
    }
    flush();
    return pieces;
}

void mask_row(Batch& batch, int64_t b, const EncoderSpecials& sp, int64_t ordinary_vocab, const MaskingOptions& opts,
              Rng& rng) {
    for (int64_t t = 0; t < batch.lengths[b]; t++) {
        int32_t& id = batch.inputs[b * batch.T + t];
        if (sp.is_special(id) || rng.uniform() >= opts.choose) continue;
        batch.targets[b * batch.T + t] = id;
        const float r = rng.uniform();
        if (r < opts.to_mask) {
            id = sp.mask;
        } else if (r < opts.to_mask + opts.to_random) {
            id = static_cast<int32_t>(rng.below(static_cast<uint64_t>(ordinary_vocab)));
        }
    }
}

void make_mlm_batch(Batch& batch, const std::vector<std::vector<int32_t>>& pieces, std::span<const int64_t> idx,
                    std::span<const uint64_t> keys, const MlmFraming& f) {
    const EncoderSpecials& sp = f.specials;
    int64_t longest = 0;
    for (const int64_t i : idx) longest = std::max<int64_t>(longest, static_cast<int64_t>(pieces[i].size()) + 2);
    batch.B = static_cast<int64_t>(idx.size());
    batch.T = std::min(f.max_T, (longest + 15) / 16 * 16);
    batch.inputs.assign(static_cast<size_t>(batch.B * batch.T), sp.pad);
    batch.targets.assign(batch.inputs.size(), kernels::kIgnoreIndex);
    batch.lengths.resize(static_cast<size_t>(batch.B));
    batch.labels.clear();
    for (int64_t b = 0; b < batch.B; b++) {
        const std::vector<int32_t>& p = pieces[idx[b]];
        const auto n = static_cast<int64_t>(std::min<size_t>(p.size(), batch.T - 2));
        int32_t* row = batch.inputs.data() + b * batch.T;
        row[0] = sp.cls;
        std::copy_n(p.begin(), n, row + 1);
        row[n + 1] = sp.sep;
        batch.lengths[b] = static_cast<int32_t>(n + 2);
        Rng rng(mix_seed(f.seed, keys[b]));
        mask_row(batch, b, sp, f.ordinary_vocab, f.masking, rng);
    }
}

std::vector<uint16_t> read_split_tokens(const std::string& dir, const std::string& split) {
    const std::vector<std::string> paths = find_shards(dir, split);  // as the LM's DataLoader finds them
    std::vector<uint16_t> tokens;
    for (const std::string& p : paths) {
        const Shard shard(p);
        tokens.insert(tokens.end(), shard.tokens().begin(), shard.tokens().end());
    }
    return tokens;
}

}  // namespace lmforge
