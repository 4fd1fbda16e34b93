// tokenizer/: the GPT-2 pre-tokenizer against pieces from the reference pattern (PyPI regex
// running tiktoken's pattern), the byte-level alphabet, BPE merging (both paths against a
// brute-force reference), special tokens, the character tokenizer, saving and loading, and
// damaged vocabulary files. Needs no network: the vocabularies here are small and synthetic.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "tokenizer/batch_encode.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/char_tokenizer.h"
#include "tokenizer/encoder_specials.h"
#include "tokenizer/pretokenizer.h"
#include "temp_dir.h"
#include "test_util.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> pieces(std::string_view text) {
    std::vector<std::string> out;
    pretokenize_gpt2(text, [&](std::string_view p) { out.emplace_back(p); });
    return out;
}

TEST(Pretokenizer, MatchesTheReferencePattern) {
    // Expected pieces: regex.findall with tiktoken's "gpt2" pattern (PyPI regex).
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"Hello world", {"Hello", " world"}},
        {"it's DON'T we'll", {"it", "'s", " DON", "'", "T", " we", "'ll"}},
        {"a  b", {"a", " ", " b"}},
        {"a   b", {"a", "  ", " b"}},
        {"\t\tword", {"\t", "\t", "word"}},
        {"x \n y", {"x", " \n", " y"}},
        {"trailing  ", {"trailing", "  "}},
        {"  ", {"  "}},
        {" ", {" "}},
        {"12abc 34", {"12", "abc", " 34"}},
        {"!!'s", {"!!'", "s"}},
        {" 's", {" '", "s"}},
        {"e\u0301t\u00e9", {"e", "\u0301", "t\u00e9"}},
        {"\u4f60\u597d \u4e16\u754c", {"\u4f60\u597d", " \u4e16\u754c"}},
        {"a\u00a0b", {"a", "\u00a0", "b"}},
        {"a\u00a0 b", {"a", "\u00a0", " b"}},
        {"tab\t\tx", {"tab", "\t", "\t", "x"}},
        {"\r\n\r\nx", {"\r\n\r", "\n", "x"}},
        {"\U0001F600\U0001F600 x", {"\U0001F600\U0001F600", " x"}},
        {"x\x1cy", {"x", "\x1c", "y"}},
    };
    for (const auto& [text, want] : cases) EXPECT_EQ(pieces(text), want) << text;
}

TEST(Pretokenizer, InvalidUtf8BytesAreOtherCharacters) {
    EXPECT_EQ(pieces("ab\xff\xfe cd \xc3"), (std::vector<std::string>{"ab", "\xff\xfe", " cd", " \xc3"}));
}

TEST(ByteLevel, AlphabetRoundTripsEveryByte) {
    std::string all;
    for (int b = 0; b < 256; b++) all += static_cast<char>(b);
    EXPECT_EQ(unicode_to_bytes(bytes_to_unicode(all)), all);
    EXPECT_EQ(bytes_to_unicode(" "), "\u0120");  // GPT-2's "Ġ"
    EXPECT_EQ(bytes_to_unicode("\n"), "\u010a");  // "Ċ"
    EXPECT_EQ(bytes_to_unicode("a"), "a");
    EXPECT_FALSE(unicode_to_bytes("\u4f60").has_value());
}

// 256 bytes, then merges in rank order over the letters a, b, c. Consistent, as a vocabulary
// built by merging is: BPE of each merged token's own bytes gives that token (encode_piece
// looks whole pieces up first, as tiktoken does, which relies on this).
const std::vector<std::pair<std::string, std::string>> kTinyMerges = {
    {"a", "b"}, {"ab", "c"}, {"a", "a"}, {"c", "c"}, {"b", "a"}, {"aa", "aa"}, {"abc", "ab"},
    {"cc", "a"}, {"b", "b"}};
std::unique_ptr<BpeTokenizer> tiny_bpe() {
    std::vector<std::pair<std::string, TokenId>> vocab;
    for (int b = 0; b < 256; b++) vocab.emplace_back(std::string(1, static_cast<char>(b)), b);
    TokenId next = 256;
    for (const auto& [a, b] : kTinyMerges) vocab.emplace_back(a + b, next++);
    return std::make_unique<BpeTokenizer>(vocab, kTinyMerges, std::map<std::string, TokenId>{{kEndOfText, next}},
                                          "tiny");
}

// BPE by the book: repeatedly merge the leftmost lowest-ranked pair, O(n²) per merge.
std::vector<std::string> reference_bpe(const std::string& piece,
                                       const std::vector<std::pair<std::string, std::string>>& merges) {
    std::vector<std::string> parts;
    for (char c : piece) parts.emplace_back(1, c);
    while (true) {
        size_t best = SIZE_MAX, best_rank = SIZE_MAX;
        for (size_t i = 0; i + 1 < parts.size(); i++) {
            for (size_t r = 0; r < merges.size() && r < best_rank; r++) {
                if (merges[r].first == parts[i] && merges[r].second == parts[i + 1]) {
                    best = i;
                    best_rank = r;
                }
            }
        }
        if (best == SIZE_MAX) return parts;
        parts[best] += parts[best + 1];
        parts.erase(parts.begin() + static_cast<ptrdiff_t>(best) + 1);
    }
}

TEST(Bpe, MergesLowestRankLeftmostFirst) {
    const auto bpe = tiny_bpe();
    std::vector<TokenId> ids;
    // c a b c a a b: (a,b) rank 0 twice, leftmost first -> c ab c a a b -> c ab c a ab; then
    // (ab,c) rank 1 beats (a,a) rank 2 -> c abc a ab; no merge is left.
    bpe->encode_piece("cabcaab", ids);
    EXPECT_EQ(ids, (std::vector<TokenId>{'c', 256 + 1, 'a', 256}));
    EXPECT_EQ(bpe->encode_ordinary("aaaa"), (std::vector<TokenId>{256 + 5}));  // aa|aa -> aaaa
    EXPECT_EQ(bpe->encode_ordinary("abcab"), (std::vector<TokenId>{256 + 6}));
}

TEST(Bpe, BothMergePathsMatchTheReferenceOnRandomPieces) {
    const auto bpe = tiny_bpe();
    std::mt19937 rng(5);
    for (int trial = 0; trial < 300; trial++) {
        const size_t n = 1 + rng() % 200;  // pieces over 64 bytes take the heap path
        std::string piece;
        for (size_t i = 0; i < n; i++) piece += "abc"[rng() % 3];
        std::vector<TokenId> got;
        bpe->encode_piece(piece, got);
        std::vector<std::string> got_parts;
        for (TokenId id : got) got_parts.push_back(bpe->decode(std::span(&id, 1)));
        ASSERT_EQ(got_parts, reference_bpe(piece, kTinyMerges)) << piece;
    }
}

TEST(Bpe, SpecialTokensOnlyWhenAllowed) {
    const auto bpe = tiny_bpe();
    const TokenId eot = *bpe->eot_id();
    const std::vector<TokenId> ids = bpe->encode("ab<|endoftext|>c");
    EXPECT_EQ(ids, (std::vector<TokenId>{256, eot, 'c'}));
    const std::vector<TokenId> plain = bpe->encode_ordinary("ab<|endoftext|>c");
    EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
    EXPECT_EQ(bpe->decode(plain), "ab<|endoftext|>c");
    EXPECT_EQ(bpe->decode(ids), "ab<|endoftext|>c");
}

// With several specials, the earliest wins and the longest of two starting together; one that
// never occurs changes nothing (each special's next occurrence is searched once per pass).
TEST(Bpe, SeveralSpecialsEarliestFirstLongestOnTies) {
    auto bpe = tiny_bpe();
    const TokenId xy = bpe->add_special("<|x|>"), xyz = bpe->add_special("<|x|>z"), absent = bpe->add_special("<|q|>");
    std::string text;
    std::vector<TokenId> expected;
    const auto plain = [&](const std::string& s) {
        text += s;
        const auto ids = bpe->encode_ordinary(s);
        expected.insert(expected.end(), ids.begin(), ids.end());
    };
    for (int i = 0; i < 300; i++) {
        plain("ab ");
        text += "<|x|>z";
        expected.push_back(xyz);
        plain(" c");
        text += "<|x|>";
        expected.push_back(xy);
        if (i % 100 == 0) {
            text += "<|endoftext|>";
            expected.push_back(*bpe->eot_id());
        }
    }
    plain("ba");
    const std::vector<TokenId> got = bpe->encode(text);
    EXPECT_EQ(got, expected);
    EXPECT_EQ(std::count(got.begin(), got.end(), absent), 0);
}

TEST(Bpe, AnyBytesRoundTripAndBadIdsAreRefused) {
    const auto bpe = tiny_bpe();
    const std::string text = "ab\xff\xfe \x80 cab\xc3\n\r\n  \t";
    EXPECT_EQ(bpe->decode(bpe->encode_ordinary(text)), text);
    const std::vector<TokenId> bad = {1, 9999};
    EXPECT_THROW(bpe->decode(bad), InputError);
}

// The constructor checks the ids it indexes its table with, whoever calls it: n tokens take
// ids 0 .. n-1, each once.
TEST(Bpe, RefusesIdsOutsideItsTokens) {
    std::vector<std::pair<std::string, TokenId>> bytes;
    for (int b = 0; b < 256; b++) bytes.emplace_back(std::string(1, static_cast<char>(b)), b);
    const auto with_special = [&](TokenId id) {
        return BpeTokenizer(bytes, {}, {{"<|x|>", id}}, "ids").vocab_size();
    };
    EXPECT_EQ(with_special(256), 257);
    for (const TokenId bad : {-5, -100000, 257, std::numeric_limits<TokenId>::max(), 3}) {
        const std::string error = test::input_error_of([&] { with_special(bad); });
        EXPECT_NE(error.find("ids: token '<|x|>' has id " + std::to_string(bad)), std::string::npos) << error;
    }
}

TEST(Bpe, SafeCutsAndBatchesEncodeAsTheWhole) {
    const auto bpe = tiny_bpe();
    std::mt19937 rng(9);
    std::string text;
    const char* words[] = {"abc", " ab", "  ", "\n", "ca", " \u00a0b", "!!", " 12", "\t"};
    for (int i = 0; i < 5000; i++) text += words[rng() % 9];
    const auto whole = bpe->encode_ordinary(text);
    const auto batched = encode_batch(*bpe, {text, "abc", ""}, {}, 257);  // many small parts
    EXPECT_EQ(batched[0], whole);
    EXPECT_EQ(batched[1], bpe->encode_ordinary("abc"));
    EXPECT_TRUE(batched[2].empty());
    for (size_t cut : bpe->safe_cuts(text, 100)) {
        const auto a = bpe->encode_ordinary(std::string_view(text).substr(0, cut));
        const auto b = bpe->encode_ordinary(std::string_view(text).substr(cut));
        std::vector<TokenId> joined = a;
        joined.insert(joined.end(), b.begin(), b.end());
        ASSERT_EQ(joined, whole) << "cut at " << cut;
    }
}

class TokenizerFiles : public test::TempDirTest {
protected:
};

TEST_F(TokenizerFiles, BpeSavesAndLoadsBack) {
    const auto bpe = tiny_bpe();
    bpe->save(dir_.string());
    const auto loaded = load_tokenizer(dir_.string());
    const std::string text = "abcab cc aaaa ba bb <|endoftext|> \xff";
    EXPECT_EQ(loaded->encode(text), bpe->encode(text));
    EXPECT_EQ(loaded->vocab_size(), bpe->vocab_size());
}

// Special tokens of any spelling stay special through save and load: encoder.json alone would
// read "[MASK] " (a space, outside the byte-level alphabet) as damaged and "[PAD]" as text.
TEST_F(TokenizerFiles, SpecialsOfAnySpellingSurviveSaveAndLoad) {
    auto bpe = tiny_bpe();
    const EncoderSpecials sp = add_encoder_specials(*bpe);
    const TokenId spaced = bpe->add_special("<s> ");
    bpe->save(dir_.string());
    const auto loaded = load_tokenizer(dir_.string());
    const std::string text = "[CLS]ab<s> c[SEP][PAD]<|endoftext|>";
    EXPECT_EQ(loaded->encode(text), bpe->encode(text));
    EXPECT_EQ(loaded->encode(text), (std::vector<TokenId>{sp.cls, 256, spaced, 'c', sp.sep, sp.pad, *bpe->eot_id()}));
    EXPECT_EQ(loaded->special_tokens(), bpe->special_tokens());
    EXPECT_EQ(loaded->vocab_size(), bpe->vocab_size());
    // An added token that takes an ordinary token's id, or is empty (it would match everywhere),
    // is refused by name.
    const nlohmann::json saved = nlohmann::json::parse(std::ifstream(dir_ / "added_tokens.json"));
    const auto error_with = [&](const std::string& token, int64_t id) {
        nlohmann::json added = saved;
        added[token] = id;
        write("added_tokens.json", added.dump());
        return test::input_error_of([&] { load_tokenizer(dir_.string()); });
    };
    const std::string clash = error_with("[X]", 97);
    EXPECT_NE(clash.find("token '[X]' has id 97, which " + (dir_ / "encoder.json").string() + " gives to 'a'"),
              std::string::npos)
        << clash;
    EXPECT_NE(error_with("", 300).find("an added token is empty"), std::string::npos);
    EXPECT_NE(error_with("[Y]", -1).find("token '[Y]' has no valid id (-1)"), std::string::npos);
    EXPECT_NE(error_with("[PAD]", sp.pad + 1).find("token '[PAD]' has id " + std::to_string(sp.pad + 1) + ", but "),
              std::string::npos);
}

// transformers' added_tokens.json lists only tokens past the vocabulary (a <|pad|> added to
// GPT-2's), not <|endoftext|>: it stays special.
TEST_F(TokenizerFiles, EndOfTextStaysSpecialBesideAnAddedTokensList) {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; b++) vocab[bytes_to_unicode(std::string(1, static_cast<char>(b)))] = b;
    vocab["<|endoftext|>"] = 256;
    const auto tok = load_gpt2_files(write("encoder.json", vocab.dump()), write("vocab.bpe", "#version: 0.2\n"),
                                     write("added_tokens.json", R"({"<|pad|>": 257})"));
    EXPECT_EQ(tok->eot_id(), std::optional<TokenId>(256));
    EXPECT_EQ(tok->encode("a<|endoftext|><|pad|>"), (std::vector<TokenId>{97, 256, 257}));
}

// Ids a tokenizer file gives that are no ids, or lie outside [0, N) for the N tokens its files
// name: a negative one indexed the id table before its start (heap corruption), 2^31 - 1 asked
// for a table of 2^31 entries, 2^40 was truncated. Each is refused naming file, token and value.
const std::vector<std::string> kBadIds = {"-5", "-100000", "2147483647", "1099511627776", "1.5", "\"7\""};

nlohmann::json byte_vocab() {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; b++) vocab[bytes_to_unicode(std::string(1, static_cast<char>(b)))] = b;
    return vocab;
}

std::string bad_id_message(const std::string& where, const std::string& token, const std::string& id) {
    return where + ": token '" + token + "' has no valid id (" + id + ")";
}

TEST_F(TokenizerFiles, Gpt2FilesRefuseIdsOutsideTheVocabulary) {
    const std::string bpe = write("vocab.bpe", "#version: 0.2\n");
    const std::string good_enc = write("good.json", byte_vocab().dump());
    for (const std::string& bad : kBadIds) {
        for (const std::string token : {"<|foo|>", "ab"}) {  // a special token and an ordinary one
            nlohmann::json vocab = byte_vocab();
            vocab[token] = nlohmann::json::parse(bad);
            const std::string enc = write("encoder.json", vocab.dump());
            EXPECT_NE(test::input_error_of([&] { load_gpt2_files(enc, bpe); }).find(bad_id_message(enc, token, bad)),
                      std::string::npos)
                << token << ": " << bad;
        }
        const std::string added = write("added_tokens.json", R"({"[X]": )" + bad + "}");
        EXPECT_NE(test::input_error_of([&] { load_gpt2_files(good_enc, bpe, added); })
                      .find(bad_id_message(added, "[X]", bad)),
                  std::string::npos)
            << bad;
    }
    // 256 entries and one added token: ids 0 .. 256; 257 would leave a hole.
    EXPECT_EQ(load_gpt2_files(good_enc, bpe, write("added_tokens.json", R"({"[X]": 256})"))->vocab_size(), 257);
    const std::string hole = write("added_tokens.json", R"({"[X]": 257})");
    EXPECT_NE(test::input_error_of([&] { load_gpt2_files(good_enc, bpe, hole); })
                  .find(bad_id_message(hole, "[X]", "257")),
              std::string::npos);
}

TEST_F(TokenizerFiles, TokenizerJsonRefusesIdsOutsideTheVocabulary) {
    const auto hf_json = [&](const nlohmann::json& vocab, const std::string& added) {
        return write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": )" + vocab.dump() +
                                           R"(, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"}, )" +
                                           R"("added_tokens": [)" + added + "]}");
    };
    for (const std::string& bad : kBadIds) {
        nlohmann::json vocab = byte_vocab();
        vocab["<|foo|>"] = nlohmann::json::parse(bad);
        const std::string in_vocab = hf_json(vocab, "");
        EXPECT_NE(test::input_error_of([&] { load_tokenizer_json(in_vocab); })
                      .find(bad_id_message(in_vocab + ": model.vocab", "<|foo|>", bad)),
                  std::string::npos)
            << bad;
        const std::string added = hf_json(byte_vocab(), R"({"id": )" + bad + R"(, "content": "[X]"})");
        EXPECT_NE(test::input_error_of([&] { load_tokenizer_json(added); })
                      .find(bad_id_message(added + ": added_tokens", "[X]", bad)),
                  std::string::npos)
            << bad;
    }
    EXPECT_EQ(load_tokenizer_json(hf_json(byte_vocab(), R"({"id": 256, "content": "[X]"})"))->vocab_size(), 257);
}

// A number beyond a double's range (1e400) is no JSON lmforge can read: nlohmann throws
// out_of_range for it, not parse_error, and that once escaped as an internal error. (Found by
// fuzz/gpt2_files_fuzz.cpp.)
TEST_F(TokenizerFiles, NumbersBeyondADoubleAreRefusedNamingTheFile) {
    const std::string huge = R"({"ab": 1e400})";
    const std::string bpe = write("vocab.bpe", "#version: 0.2\n");
    const std::string enc = write("encoder.json", huge);
    EXPECT_NE(test::input_error_of([&] { load_gpt2_files(enc, bpe); }).find(enc + ": a number out of range"),
              std::string::npos);
    const std::string good_enc = write("good.json", byte_vocab().dump());
    const std::string added = write("added_tokens.json", huge);
    EXPECT_NE(test::input_error_of([&] { load_gpt2_files(good_enc, bpe, added); }).find(added + ": a number out of range"),
              std::string::npos);
    const std::string hf = write("tokenizer.json", R"({"model": {"type": "BPE", "dropout": -1e999}})");
    EXPECT_NE(test::input_error_of([&] { load_tokenizer_json(hf); }).find(hf + ": a number out of range"),
              std::string::npos);
}

// A tokenizer.json that is JSON but no object (a number, a list) is refused naming the file;
// reading its "lmforge_tokenizer" field once threw nlohmann's type_error. (Found by
// fuzz/tokenizer_json_fuzz.cpp.)
TEST_F(TokenizerFiles, TokenizerJsonThatIsNoObjectIsRefusedNamingTheFile) {
    for (const std::string text : {"6", "[]", "\"BPE\"", "null"}) {
        const std::string path = write("tokenizer.json", text);
        EXPECT_NE(test::input_error_of([&] { load_tokenizer_json(path); }).find(path + ": not a JSON object"),
                  std::string::npos)
            << text;
    }
}

// A million nested lists as a token's id once overflowed the stack in dump(), naming the bad
// id. (Reproduced with fuzz/gpt2_files_fuzz.cpp on an input longer than libFuzzer's default
// -max_len.)
TEST_F(TokenizerFiles, DeeplyNestedJsonIsRefused) {
    const std::string enc = write("encoder.json", R"({"ab": )" + std::string(1'000'000, '[') +
                                                      std::string(1'000'000, ']') + "}");
    const std::string bpe = write("vocab.bpe", "#version: 0.2\n");
    EXPECT_NE(test::input_error_of([&] { load_gpt2_files(enc, bpe); }).find(enc + ": JSON nested deeper than 64 levels"),
              std::string::npos);
}

// lmforge's character tokenizer.json names its kind "char"; any other value, a string or not,
// is refused naming the file. An object there once let nlohmann's type_error out. (Found by
// fuzz/tokenizer_json_fuzz.cpp.)
TEST_F(TokenizerFiles, ACharTokenizerOfAnotherKindIsRefusedNamingTheFile) {
    for (const std::string kind : {R"({"<|endoftext|>": 10})", "7", "null", R"("bpe")"}) {
        const std::string path = write("tokenizer.json", R"({"lmforge_tokenizer": )" + kind + R"(, "chars": ["a"]})");
        EXPECT_NE(test::input_error_of([&] { load_tokenizer_json(path); })
                      .find(path + ": lmforge_tokenizer is " + nlohmann::json::parse(kind).dump() + ", not \"char\""),
                  std::string::npos)
            << kind;
    }
    const std::string path = write("tokenizer.json", R"({"lmforge_tokenizer": "char", "chars": ["a"]})");
    EXPECT_EQ(load_tokenizer_json(path)->decode(std::vector<TokenId>{0}), "a");
}

TEST_F(TokenizerFiles, CharTokenizerBuildsSavesAndRefusesUnknownCharacters) {
    const CharTokenizer chars = CharTokenizer::from_texts({"hello", "w\u00f6rld\n"});
    EXPECT_EQ(chars.vocab_size(), 9 + 1);  // d e h l o r w ö \n, and <|endoftext|>
    const auto ids = chars.encode("h\u00f6<|endoftext|>");
    EXPECT_EQ(ids.back(), *chars.eot_id());
    EXPECT_EQ(chars.decode(ids), "h\u00f6<|endoftext|>");
    EXPECT_NE(test::input_error_of([&] { chars.encode_ordinary("hex"); }).find("\\x78 at byte 2"), std::string::npos);
    chars.save(dir_.string());
    const auto loaded = load_tokenizer((dir_ / "tokenizer.json").string());
    EXPECT_EQ(loaded->kind(), "char");
    EXPECT_EQ(loaded->encode_ordinary("world"), chars.encode_ordinary("world"));
}

TEST_F(TokenizerFiles, DamagedFilesAreNamedWithTheLine) {
    const std::string enc = write("encoder.json", "{\"a\": 0, ");
    const std::string bpe = write("vocab.bpe", "#version: 0.2\na b\n");
    EXPECT_NE(test::input_error_of([&] { load_gpt2_files(enc, bpe); }).find(enc + ": not valid JSON"), std::string::npos);
    nlohmann::json vocab = nlohmann::json::object();  // all 256 single bytes
    for (int b = 0; b < 256; b++) vocab[bytes_to_unicode(std::string(1, static_cast<char>(b)))] = b;
    const std::string good_enc = write("encoder.json", vocab.dump());
    const std::string bad_bpe = write("vocab.bpe", "#version: 0.2\na b\nnospace\n");
    EXPECT_NE(test::input_error_of([&] { load_gpt2_files(good_enc, bad_bpe); }).find(bad_bpe + ":3:"), std::string::npos);
    const std::string no_byte = write("encoder.json", "{\"a\": 0}");
    EXPECT_NE(test::input_error_of([&] { load_gpt2_files(no_byte, write("vocab.bpe", "")); }).find("single byte"),
              std::string::npos);
    EXPECT_NE(test::input_error_of([&] { load_tokenizer_json(write("t.json", R"({"model": {"type": "WordPiece"}})")); })
                  .find("not a BPE tokenizer.json"),
              std::string::npos);
    EXPECT_NE(test::input_error_of([&] { load_tokenizer("no/such/thing"); }).find("unknown tokenizer"), std::string::npos);
    // A tokenizer.json whose normalizer or pre-tokenizer lmforge does not implement (it would
    // encode otherwise), or that lacks a field, is refused by name
    // (hf_tokenizer_json_test.cpp has the rest).
    const auto hf_json = [&](const std::string& extra) {
        return write("hf.json", R"({"model": {"type": "BPE", "vocab": )" + vocab.dump() + R"(, "merges": []})" + extra + "}");
    };
    const std::string byte_level = R"(, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})";
    EXPECT_EQ(load_tokenizer_json(hf_json(byte_level))->encode_ordinary("ab"), (std::vector<TokenId>{97, 98}));
    EXPECT_NE(test::input_error_of([&] { load_tokenizer_json(hf_json(byte_level + R"(, "normalizer": {"type": "Lowercase"})")); })
                  .find("hf.json: normalizer \"Lowercase\" is not supported"),
              std::string::npos);
    EXPECT_NE(test::input_error_of([&] {
                  load_tokenizer_json(hf_json(R"(, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true})"));
              }).find("hf.json: pre_tokenizer ByteLevel with add_prefix_space true is not supported"),
              std::string::npos);
    EXPECT_NE(test::input_error_of([&] {
                  load_tokenizer_json(write("nomerges.json", R"({"model": {"type": "BPE", "vocab": {}}, "pre_tokenizer": {"type": "ByteLevel"}})"));
              }).find("not a tokenizer.json lmforge can read"),
              std::string::npos);
}

}  // namespace
}  // namespace lmforge

namespace lmforge {
namespace {

// An encoder's special tokens join the BPE vocabulary after its own ids: encode() turns their
// text into them, decode() back, and a second [MASK] is refused.
TEST(Bpe, GainsTheEncoderSpecialTokens) {
    auto bpe = tiny_bpe();
    const int64_t before = bpe->vocab_size();
    const EncoderSpecials sp = add_encoder_specials(*bpe);
    EXPECT_EQ(sp.pad, before);
    EXPECT_EQ(sp.mask, before + 3);
    EXPECT_EQ(bpe->vocab_size(), before + 4);
    EXPECT_EQ(sp.vocab_size, bpe->vocab_size());
    const std::vector<TokenId> ids = bpe->encode("[CLS]ab[MASK]c[SEP][PAD]");
    EXPECT_EQ(ids, (std::vector<TokenId>{sp.cls, 256, sp.mask, 'c', sp.sep, sp.pad}));
    EXPECT_EQ(bpe->decode(ids), "[CLS]ab[MASK]c[SEP][PAD]");
    EXPECT_EQ(bpe->encode_ordinary("[MASK]").size(), 6u);  // ordinary encoding: its characters
    EXPECT_THROW(bpe->add_special("[MASK]"), InputError);
}

}  // namespace
}  // namespace lmforge
