// tokenizer/tokenizer_io reading Hugging Face tokenizer.json files beyond GPT-2's: Llama 3's
// and SmolLM2's pre-tokenizers, ignore_merges, added tokens special or not, the roles
// tokenizer_config.json names, saving and loading back, and each refusal in one line naming
// the field. (tools/check_llama_tokenizers.py checks the ids against the tokenizers library.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "temp_dir.h"
#include "test_util.h"
#include "tokenizer/batch_encode.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenizer_chain.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr TokenId kBc = 256, kAb = 257, kAbc = 258, kBegin = 259, kTool = 260, kEnd = 261;

json llama3_pre() {
    return {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3}}}, {"behavior", "Isolated"}, {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
}

json added_token(TokenId id, const std::string& content, bool special) {
    return {{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
            {"rstrip", false}, {"normalized", !special}, {"special", special}};
}

// The 256 bytes, then "bc", "ab" and "abc" by merges in that order: merging "abc" gives
// a + bc (the first merge), not the token abc; only ignore_merges makes it one token. Added:
// <|begin_of_text|> (special), <tool> (not special), <|end_of_text|> (special).
json tokenizer_json(const json& pre, bool ignore_merges) {
    json vocab = json::object();
    for (int b = 0; b < 256; b++) vocab[bytes_to_unicode(std::string(1, static_cast<char>(b)))] = b;
    vocab["bc"] = kBc;
    vocab["ab"] = kAb;
    vocab["abc"] = kAbc;
    return {{"version", "1.0"},
            {"added_tokens",
             {added_token(kBegin, "<|begin_of_text|>", true), added_token(kTool, "<tool>", false),
              added_token(kEnd, "<|end_of_text|>", true)}},
            {"normalizer", nullptr},
            {"pre_tokenizer", pre},
            {"post_processor", nullptr},
            {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
            {"model",
             {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
              {"ignore_merges", ignore_merges}, {"vocab", vocab},
              {"merges", json::array({json::array({"b", "c"}), json::array({"a", "b"}), json::array({"ab", "c"})})}}}};
}

class HfTokenizerJson : public test::TempDirTest {
protected:
    std::string write_json(const json& j, const std::string& name = "tokenizer.json") { return write(name, j.dump()); }
    std::string refusal(const json& j) {
        const std::string path = write_json(j);
        const std::string msg = test::input_error_of([&] { load_tokenizer_json(path); });
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        return msg;
    }
};

TEST_F(HfTokenizerJson, IgnoreMergesMakesAWholeTokenOneId) {
    const auto with = load_tokenizer_json(write_json(tokenizer_json(llama3_pre(), true)));
    EXPECT_EQ(with->encode_ordinary("abc"), (std::vector<TokenId>{kAbc}));
    const auto without = load_tokenizer_json(write_json(tokenizer_json(llama3_pre(), false)));
    EXPECT_EQ(without->encode_ordinary("abc"), (std::vector<TokenId>{'a', kBc}));
    EXPECT_EQ(without->encode_ordinary("bc ab"), (std::vector<TokenId>{kBc, ' ', kAb}));
}

TEST_F(HfTokenizerJson, Llama3PiecesAreEncodedApart) {
    const auto tok = load_tokenizer_json(write_json(tokenizer_json(llama3_pre(), true)));
    const auto chain = PretokenizerChain::from_json(llama3_pre(), "t");
    const std::string text = "It's abc ABC abcabc 1234567\r\n\r\n  caf\u00e9 \U0001f600!";
    std::vector<TokenId> want;
    chain->split(text, [&](std::string_view piece) { dynamic_cast<const BpeTokenizer&>(*tok).encode_piece(piece, want); });
    EXPECT_EQ(tok->encode_ordinary(text), want);
    EXPECT_EQ(tok->decode(tok->encode_ordinary(text)), text);
}

TEST_F(HfTokenizerJson, AddedTokensThatAreNotSpecialAreFoundInAnyText) {
    const auto tok = load_tokenizer_json(write_json(tokenizer_json(llama3_pre(), true)));
    const std::string text = "x<tool>abc<|begin_of_text|>";
    const std::vector<TokenId> ids = tok->encode_ordinary(text);
    EXPECT_EQ(std::vector<TokenId>(ids.begin(), ids.begin() + 3), (std::vector<TokenId>{'x', kTool, kAbc}));
    EXPECT_EQ(std::count(ids.begin(), ids.end(), kBegin), 0);  // a special token's text is text here
    EXPECT_EQ(tok->decode(ids), text);
    EXPECT_EQ(tok->encode(text), (std::vector<TokenId>{'x', kTool, kAbc, kBegin}));
    EXPECT_EQ(tok->decode(tok->encode(text)), text);
    EXPECT_EQ(tok->special_tokens().count("<tool>"), 0u);
    EXPECT_EQ(tok->special_tokens().at("<|begin_of_text|>"), kBegin);
}

TEST_F(HfTokenizerJson, TokenizerConfigNamesBosAndEos) {
    const std::string path = write_json(tokenizer_json(llama3_pre(), true));
    write("tokenizer_config.json",
          R"({"bos_token": "<|begin_of_text|>", "eos_token": {"content": "<|end_of_text|>", "special": true},
              "pad_token": null, "chat_template": "{{ bos_token }}"})");
    const auto tok = load_tokenizer_json(path);
    EXPECT_EQ(tok->roles().at("bos_token"), kBegin);
    EXPECT_EQ(tok->roles().at("eos_token"), kEnd);
    EXPECT_FALSE(tok->roles().contains("pad_token"));
    EXPECT_EQ(tok->eot_id(), kEnd);  // no <|endoftext|>: documents end with the eos token
    const std::string config = write("tokenizer_config.json", R"({"eos_token": "<nope>"})");
    EXPECT_NE(test::input_error_of([&] { load_tokenizer_json(path); })
                  .find(config + R"(: eos_token "<nope>" is not a token of the tokenizer beside it)"),
              std::string::npos);
}

TEST_F(HfTokenizerJson, SavesWhatGpt2FilesCannotHoldAsTokenizerJson) {
    for (const bool ignore_merges : {true, false}) {
        const std::string path = write_json(tokenizer_json(llama3_pre(), ignore_merges));
        write("tokenizer_config.json", R"({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"})");
        const auto tok = load_tokenizer_json(path);
        const fs::path saved = dir_ / "saved";
        tok->save(saved.string());
        EXPECT_TRUE(fs::exists(saved / "tokenizer.json"));
        EXPECT_FALSE(fs::exists(saved / "encoder.json"));
        const auto back = load_tokenizer(saved.string());
        const std::string text = "It's abc<tool> 1234567\r\n  x<|end_of_text|>";
        EXPECT_EQ(back->encode(text), tok->encode(text)) << ignore_merges;
        EXPECT_EQ(back->encode_ordinary(text), tok->encode_ordinary(text)) << ignore_merges;
        EXPECT_EQ(back->vocab_size(), tok->vocab_size());
        EXPECT_EQ(back->roles(), tok->roles());
        fs::remove_all(saved);
    }
}

TEST_F(HfTokenizerJson, BatchesCutAtSpacesOnlyWhereThePatternAllows) {
    const auto tok = load_tokenizer_json(write_json(tokenizer_json(llama3_pre(), true)));
    std::string text;
    for (int i = 0; i < 3000; i++) text += (i % 7 == 0) ? "abc<tool> 12345\r\n" : "It's  abc ";
    EXPECT_FALSE(tok->safe_cuts(text, 500).empty());
    EXPECT_EQ(encode_batch(*tok, {text}, {}, 500)[0], tok->encode_ordinary(text));
    json literal = tokenizer_json(llama3_pre(), true);
    literal["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", R"(\s+|\S+)"}};
    const auto other = load_tokenizer_json(write_json(literal));
    EXPECT_TRUE(other->safe_cuts(text, 500).empty());
}

TEST_F(HfTokenizerJson, UnsupportedNormalizerIsRefusedByName) {
    json j = tokenizer_json(llama3_pre(), true);
    j["normalizer"] = {{"type", "NFKC"}};
    EXPECT_NE(refusal(j).find(path("tokenizer.json") + R"(: normalizer "NFKC" is not supported)"), std::string::npos);
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "Lowercase"}}}}};
    EXPECT_NE(refusal(j).find(R"(: normalizer "Lowercase" (in a Sequence) is not supported)"), std::string::npos);
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array()}};
    EXPECT_EQ(load_tokenizer_json(write_json(j))->vocab_size(), 262);
}

TEST_F(HfTokenizerJson, UnsupportedPreTokenizerDecoderAndModelAreRefusedByName) {
    json j = tokenizer_json({{"type", "Metaspace"}, {"replacement", "\u2581"}}, true);
    EXPECT_NE(refusal(j).find(path("tokenizer.json") + R"(: pre_tokenizer "Metaspace" is not supported)"),
              std::string::npos);
    j = tokenizer_json(llama3_pre(), true);
    j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
    EXPECT_NE(refusal(j).find(R"(: pre_tokenizer Split with behavior "Removed" is not supported)"), std::string::npos);
    j = tokenizer_json(llama3_pre(), true);
    j["decoder"] = {{"type", "Metaspace"}};
    EXPECT_NE(refusal(j).find(R"(: decoder "Metaspace" is not supported)"), std::string::npos);
    for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
             {"byte_fallback", true}, {"dropout", 0.1}, {"continuing_subword_prefix", "##"}, {"end_of_word_suffix", "</w>"}}) {
        j = tokenizer_json(llama3_pre(), true);
        j["model"][key] = value;
        EXPECT_NE(refusal(j).find(": model." + key + " = " + value.dump() + " is not supported"), std::string::npos) << key;
    }
    j = tokenizer_json(llama3_pre(), true);
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", "(unclosed"}};
    EXPECT_NE(refusal(j).find(": pre_tokenizer Split: the pattern does not compile"), std::string::npos);
}

}  // namespace
}  // namespace lmforge
