// Masked-LM batches: pieces cut at document ends and at the length limit; framing with [CLS],
// [SEP] and [PAD] to the batch's longest piece (dynamic padding); masking rates (15% chosen;
// 80% [MASK], 10% random, 10% kept) over many tokens, specials never chosen; each row's masks
// from its own key, so a row is masked alike in any batch.
#include "train/mlm_batches.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/crossentropy.h"

namespace lmforge::test {
namespace {

constexpr int64_t kVocab = 1000;  // ordinary ids; 999 is <|endoftext|>
const EncoderSpecials kSp = EncoderSpecials::after(kVocab);

MlmFraming framing(int64_t max_T, MaskingOptions masking = {}, uint64_t seed = 42) {
    return {kSp, kVocab, max_T, masking, seed};
}

// Keys 0, 1, ...: one per row.
std::vector<uint64_t> keys_for(size_t n, uint64_t first = 0) {
    std::vector<uint64_t> keys(n);
    for (size_t i = 0; i < n; i++) keys[i] = first + i;
    return keys;
}

TEST(MlmBatches, PiecesEndAtDocumentsAndAtTheLimit) {
    const std::vector<uint16_t> stream = {1, 2, 3, 4, 5, 999, 6, 7, 999, 999, 8};
    const auto pieces = cut_pieces(stream, 999, 3);
    const std::vector<std::vector<int32_t>> want = {{1, 2, 3}, {4, 5}, {6, 7}, {8}};
    EXPECT_EQ(pieces, want);
}

TEST(MlmBatches, BatchIsFramedAndPaddedToItsLongestPiece) {
    const std::vector<std::vector<int32_t>> pieces = {std::vector<int32_t>(5, 7), std::vector<int32_t>(20, 8)};
    const std::vector<int64_t> idx = {0, 1};
    Batch b;
    make_mlm_batch(b, pieces, idx, keys_for(2), framing(128, {.choose = 0.0}));
    EXPECT_EQ(b.T, 32);  // 20 + [CLS] + [SEP] = 22, rounded up to 16
    EXPECT_EQ(b.lengths, (std::vector<int32_t>{7, 22}));
    EXPECT_EQ(b.inputs[0], kSp.cls);
    EXPECT_EQ(b.inputs[6], kSp.sep);
    for (int64_t t = 7; t < b.T; t++) EXPECT_EQ(b.inputs[t], kSp.pad);
    EXPECT_EQ(b.inputs[b.T + 21], kSp.sep);
    for (const int32_t t : b.targets) EXPECT_EQ(t, kernels::kIgnoreIndex);  // nothing chosen at rate 0
    // A batch of short pieces is short: the padding follows the batch, not the limit.
    Batch s;
    make_mlm_batch(s, pieces, std::vector<int64_t>{0}, keys_for(1), framing(128));
    EXPECT_EQ(s.T, 16);
}

TEST(MlmBatches, MaskingRatesAndTargets) {
    // 400 pieces of 254 ordinary tokens: about 100,000 tokens.
    std::vector<std::vector<int32_t>> pieces(400);
    Rng fill(3);
    for (auto& p : pieces) {
        for (int i = 0; i < 254; i++) p.push_back(static_cast<int32_t>(fill.below(kVocab - 1)));
    }
    std::vector<int64_t> idx(pieces.size());
    for (size_t i = 0; i < idx.size(); i++) idx[i] = static_cast<int64_t>(i);
    Batch b;
    make_mlm_batch(b, pieces, idx, keys_for(idx.size()), framing(256));
    int64_t real = 0, chosen = 0, masked = 0, kept = 0, replaced = 0;
    for (int64_t r = 0; r < b.B; r++) {
        for (int64_t t = 0; t < b.T; t++) {
            const int64_t i = r * b.T + t;
            const int32_t target = b.targets[i], input = b.inputs[i];
            const bool special_slot = t == 0 || t >= b.lengths[r] - 1;  // [CLS], [SEP], padding
            if (special_slot) {
                EXPECT_EQ(target, kernels::kIgnoreIndex) << "a special token was chosen at " << t;
                continue;
            }
            real++;
            if (target == kernels::kIgnoreIndex) {
                EXPECT_EQ(input, pieces[r][t - 1]);  // unchosen tokens are untouched
                continue;
            }
            chosen++;
            EXPECT_EQ(target, pieces[r][t - 1]);  // the target is the original token
            if (input == kSp.mask) {
                masked++;
            } else if (input == target) {
                kept++;
            } else {
                EXPECT_LT(input, kVocab);  // a random replacement is an ordinary token
                replaced++;
            }
        }
    }
    ASSERT_EQ(real, 400 * 254);
    // Binomial spreads at these counts are about 0.1% (chosen) and 0.3-0.4% (the splits).
    EXPECT_NEAR(static_cast<double>(chosen) / real, 0.15, 0.01);
    EXPECT_NEAR(static_cast<double>(masked) / chosen, 0.80, 0.02);
    EXPECT_NEAR(static_cast<double>(replaced) / chosen, 0.10, 0.02);
    EXPECT_NEAR(static_cast<double>(kept) / chosen, 0.10, 0.02);

    Batch c;  // the same seed and keys, the same batch
    make_mlm_batch(c, pieces, idx, keys_for(idx.size()), framing(256));
    EXPECT_EQ(c.inputs, b.inputs);
    EXPECT_EQ(c.targets, b.targets);
}

// A row's masks follow its key, not its place in the batch: the rows of one batch of four
// equal those of two batches of two (two processes' shares), and other keys mask otherwise.
TEST(MlmBatches, ARowIsMaskedByItsKeyWhereverItIs) {
    std::vector<std::vector<int32_t>> pieces(4, std::vector<int32_t>(60));
    for (size_t p = 0; p < pieces.size(); p++) {
        for (size_t t = 0; t < 60; t++) pieces[p][t] = static_cast<int32_t>((p * 61 + t * 7) % (kVocab - 1));
    }
    const std::vector<int64_t> all = {0, 1, 2, 3}, first = {0, 1}, second = {2, 3};
    Batch whole, a, b, other;
    make_mlm_batch(whole, pieces, all, keys_for(4, 100), framing(64));
    make_mlm_batch(a, pieces, first, keys_for(2, 100), framing(64));
    make_mlm_batch(b, pieces, second, keys_for(2, 102), framing(64));
    ASSERT_EQ(whole.T, a.T);
    const auto half = static_cast<std::ptrdiff_t>(2 * whole.T);
    EXPECT_TRUE(std::equal(a.targets.begin(), a.targets.end(), whole.targets.begin()));
    EXPECT_TRUE(std::equal(b.targets.begin(), b.targets.end(), whole.targets.begin() + half));
    EXPECT_TRUE(std::equal(b.inputs.begin(), b.inputs.end(), whole.inputs.begin() + half));
    make_mlm_batch(other, pieces, all, keys_for(4, 200), framing(64));
    EXPECT_NE(other.targets, whole.targets);
}

}  // namespace
}  // namespace lmforge::test
