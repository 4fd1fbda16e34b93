// tokenizer/bpe_trainer: merges chosen by frequency (ties to the lowest ids), determinism,
// consistency of the trained vocabulary, and the files it writes loading back.
#include "tokenizer/bpe_trainer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge {
namespace {

std::vector<std::string> merge_strings(const BpeTokenizer& bpe) {
    std::vector<std::string> out;
    for (const auto& [a, b] : bpe.merges()) {
        out.push_back(bytes_to_unicode(bpe.decode(std::span(&a, 1))) + " " + bytes_to_unicode(bpe.decode(std::span(&b, 1))));
    }
    return out;
}

TEST(BpeTrainer, MergesMostFrequentPairsTiesToLowestIds) {
    // Words: "ab" x1, " ab" x2, " cd" x2. (a,b) occurs 3 times: first. Then (' ',c), (' ',ab),
    // (c,d)... each twice: ties go to the lowest (left, right) ids: ' '=32,'c'=99 first.
    const auto bpe = train_bpe({"ab ab ab cd cd"}, 261);
    EXPECT_EQ(merge_strings(*bpe), (std::vector<std::string>{"a b", "\u0120 c", "\u0120 ab", "\u0120c d"}));
    EXPECT_EQ(bpe->vocab_size(), 261);
    EXPECT_EQ(bpe->eot_id(), 260);
    EXPECT_EQ(bpe->encode_ordinary(" cd ab"), (std::vector<TokenId>{259, 258}));
}

TEST(BpeTrainer, APairThatAMergeTakesFromSomeWordsStaysACandidate) {
    // Words "ab" x10, "cab" x2, "ca" x3: (a,b) 12 times, (c,a) 5. Merging a+b turns "cab" into
    // "c ab", so (c,a) drops to 3, still the most frequent pair: it must come next, then (c,ab).
    std::vector<std::string_view> texts(10, "ab");
    texts.insert(texts.end(), 2, "cab");
    texts.insert(texts.end(), 3, "ca");
    const auto bpe = train_bpe(texts, 262);
    EXPECT_EQ(merge_strings(*bpe), (std::vector<std::string>{"a b", "c a", "c ab"}));
}

TEST(BpeTrainer, DeterministicConsistentAndRoundTrips) {
    std::string text;
    for (int i = 0; i < 400; i++) {
        text += "the quick brown fox jumps over the lazy dog " + std::to_string(i * 7919 % 1000) + ". ";
        if (i % 5 == 0) text += "Fox-trot, \u00e9t\u00e9, \U0001F98A!\n";
    }
    const auto a = train_bpe({text, "another document"}, 700);
    const auto b = train_bpe({text, "another document"}, 700);
    EXPECT_EQ(a->merges(), b->merges());
    EXPECT_EQ(a->decode(a->encode_ordinary(text)), text);
    EXPECT_LT(a->encode_ordinary(text).size(), text.size() / 3);  // it learned: > 3 bytes a token
    for (TokenId t = 256; t < a->vocab_size() - 1; t++) {  // merging a token's bytes gives it back
        std::vector<TokenId> ids;
        a->encode_piece_by_merges(a->decode(std::span(&t, 1)), ids);
        ASSERT_EQ(ids, std::vector<TokenId>{t});
    }
    const auto dir = std::filesystem::temp_directory_path() / ("lmforge_bpe_train_" + std::to_string(::getpid()));
    a->save(dir.string());
    const auto loaded = load_tokenizer(dir.string());
    EXPECT_EQ(loaded->encode_ordinary(text), a->encode_ordinary(text));
    std::filesystem::remove_all(dir);
}

// Text full of "<|-|>" teaches a token of that shape; it is ordinary (the saved
// added_tokens.json lists the specials), so the saved tokenizer loads and gives the same ids
// (it took the token for a special, and then a merge that makes it for a broken one).
TEST(BpeTrainer, ATrainedTokenShapedLikeASpecialOneStaysOrdinary) {
    std::string text;
    for (int i = 0; i < 50; i++) text += "<|-|> hello <|=|>\n";
    const auto bpe = train_bpe({text}, 400);
    const auto dir = std::filesystem::temp_directory_path() / ("lmforge_bpe_special_" + std::to_string(::getpid()));
    bpe->save(dir.string());
    const auto loaded = load_tokenizer(dir.string());
    EXPECT_EQ(loaded->encode_ordinary(text), bpe->encode_ordinary(text));
    EXPECT_EQ(loaded->decode(loaded->encode_ordinary(text)), text);
    std::filesystem::remove_all(dir);
}

TEST(BpeTrainer, RefusesVocabularySizesOutOfRange) {
    EXPECT_THROW(train_bpe({"abc"}, 257), InputError);
    EXPECT_THROW(train_bpe({"abc"}, 70000), InputError);
    EXPECT_EQ(train_bpe({"abc"}, 1000)->vocab_size(), 257);  // no pair occurs twice: no merges
}

}  // namespace
}  // namespace lmforge
