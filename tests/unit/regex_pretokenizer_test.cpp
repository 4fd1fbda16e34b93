// tokenizer/regex_pretokenizer and pretokenizer_chain: Hugging Face's Split (Isolated), Digits
// and ByteLevel pre-tokenizers as lmforge runs them, against pieces the tokenizers library
// itself gives (PyPI tokenizers 0.23.3, pre_tokenize_str; ByteLevel's pieces mapped back to
// bytes), on the hard cases: contractions in any case, digits in threes, CRLF, combining marks,
// scripts without spaces, emoji, U+0085 and U+180E; and the refusals, each one line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "test_util.h"
#include "tokenizer/pretokenizer_chain.h"
#include "tokenizer/regex_pretokenizer.h"

namespace lmforge {
namespace {

using json = nlohmann::json;
using Cases = std::vector<std::pair<std::string, std::vector<std::string>>>;

const std::string kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<std::string> split(const RegexSplitter& re, std::string_view text) {
    std::vector<std::string> out;
    re.split(text, [&](std::string_view p) { out.emplace_back(p); });
    return out;
}

std::vector<std::string> split(const PretokenizerChain& chain, std::string_view text) {
    std::vector<std::string> out;
    chain.split(text, [&](std::string_view p) { out.emplace_back(p); });
    return out;
}

json split_step(const std::string& pattern) {
    return {{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}};
}

json byte_level(bool use_regex) {
    return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

json sequence(std::vector<json> steps) { return {{"type", "Sequence"}, {"pretokenizers", steps}}; }

// Llama 3's pre_tokenizer, as its tokenizer.json holds it.
json llama3_pre() { return sequence({split_step(kLlama3), byte_level(false)}); }

TEST(RegexSplitter, Llama3PatternSplitsAsHuggingFace) {
    const Cases cases = {
        {"It's DON'T we'LL they'Re I'M you'VE he'D", {"It", "'s", " DON", "'T", " we", "'LL", " they", "'Re", " I", "'M", " you", "'VE", " he", "'D"}},
        {"'s's ''s 'S", {"'s", "'s", " ''", "s", " '", "S"}},
        {"1234567 12 1,000,000.5", {"123", "456", "7", " ", "12", " ", "1", ",", "000", ",", "000", ".", "5"}},
        {"line one\r\nline two\r\n\r\n  indented\n", {"line", " one", "\r\n", "line", " two", "\r\n\r\n", " ", " indented", "\n"}},
        {"trailing spaces   \n   x", {"trailing", " spaces", "   \n", "  ", " x"}},
        {"a  b   c", {"a", " ", " b", "  ", " c"}},
        {"na\u00efve caf\u00e9 e\u0301t\u00e9 \u0915\u093f\u0924\u093e\u092c", {"na\u00efve", " caf\u00e9", " e", "\u0301t\u00e9", " \u0915", "\u093f\u0924", "\u093e\u092c"}},
        {"\U0001f600\U0001f44d\U0001f3fd ok \u2764\ufe0f!", {"\U0001f600\U0001f44d\U0001f3fd", " ok", " \u2764\ufe0f!"}},
        {"\u4f60\u597d\uff0c\u4e16\u754c\uff01", {"\u4f60\u597d", "\uff0c\u4e16\u754c", "\uff01"}},
        // U+0085 is white space to Oniguruma and PCRE2 alike; U+180E only to PCRE2 (rewritten).
        {"x\u0085y \u180e z\u00a0w", {"x", "\u0085y", " \u180e", " z", "\u00a0w"}},
        {"\u00bd\u00b2\u0663\u0664\u0665\u0666 \u2167", {"\u00bd\u00b2\u0663", "\u0664\u0665\u0666", " ", "\u2167"}},
        {"...hello!!! (parens) --- \"quoted\"", {"...", "hello", "!!!", " (", "parens", ")", " ---", " \"", "quoted", "\""}},
        {"\t\ttab\u3000ideographic", {"\t", "\ttab", "\u3000ideographic"}},
    };
    const RegexSplitter re(kLlama3, false, "test");
    for (const auto& [text, want] : cases) EXPECT_EQ(split(re, text), want) << text;
}

TEST(RegexSplitter, Qwen2PatternTakesDigitsOneByOne) {
    const RegexSplitter re(kQwen2, false, "test");
    EXPECT_EQ(split(re, "1234567 x1y22"),
              (std::vector<std::string>{"1", "2", "3", "4", "5", "6", "7", " x", "1", "y", "2", "2"}));
    EXPECT_EQ(split(re, "It'S 3.14"), (std::vector<std::string>{"It", "'S", " ", "3", ".", "1", "4"}));
}

TEST(RegexSplitter, GapsAndEmptyMatchesCutAsHuggingFace) {
    EXPECT_EQ(split(RegexSplitter(R"(\d+)", false, "t"), "ab12cd3"), (std::vector<std::string>{"ab", "12", "cd", "3"}));
    EXPECT_EQ(split(RegexSplitter("x*", false, "t"), "abxxc"), (std::vector<std::string>{"a", "b", "xx", "c"}));
    EXPECT_EQ(split(RegexSplitter("(?=b)", false, "t"), "abab"), (std::vector<std::string>{"a", "ba", "b"}));
    EXPECT_TRUE(split(RegexSplitter("x", false, "t"), "").empty());
    // \w as Oniguruma has it: marks and connectors are word characters; U+180E is not space.
    EXPECT_EQ(split(RegexSplitter(R"(\w+|\W)", false, "t"), "e\u0301t\u00e9_x-1 \u180e\u0085"),
              (std::vector<std::string>{"e\u0301t\u00e9_x", "-", "1", " ", "\u180e", "\u0085"}));
}

TEST(RegexSplitter, InvalidUtf8FallsBetweenMatches) {
    const RegexSplitter re(kLlama3, false, "test");
    EXPECT_EQ(split(re, "ab\xff\xfe cd \xc3"), (std::vector<std::string>{"ab", "\xff\xfe", " cd", " ", "\xc3"}));
}

TEST(RegexSplitter, ThreadsSplitAlikeAtOnce) {
    const RegexSplitter re(kLlama3, false, "test");
    std::string text;
    for (int i = 0; i < 2000; i++) text += "It's 12345 caf\u00e9\r\n  \U0001f600 ";
    const auto want = split(re, text);
    std::vector<std::vector<std::string>> got(4);
    std::vector<std::thread> threads;
    for (auto& g : got) threads.emplace_back([&] { g = split(re, text); });
    for (auto& t : threads) t.join();
    for (const auto& g : got) EXPECT_EQ(g, want);
}

TEST(RegexSplitter, RewritesSpaceAndWordClassesAsOniguruma) {
    EXPECT_EQ(oniguruma_compatible(R"(a\sb)", "t").find(R"([\t\n)"), 1u);
    EXPECT_NE(oniguruma_compatible(R"([^\s\p{L}])", "t").find(R"([^\t\n\x0b)"), std::string::npos);
    EXPECT_EQ(oniguruma_compatible(R"(\\s)", "t"), R"(\\s)");  // an escaped backslash, then s
    EXPECT_EQ(oniguruma_compatible(R"([]\d])", "t"), R"([]\d])");
    const std::string msg = test::input_error_of([] { oniguruma_compatible(R"([^\S\n])", "tok.json"); });
    EXPECT_NE(msg.find(R"(tok.json: \S inside a character class is not supported)"), std::string::npos) << msg;
}

TEST(RegexSplitter, APatternThatDoesNotCompileIsRefusedInOneLine) {
    const std::string msg = test::input_error_of([] { RegexSplitter("(a", false, "tok.json: pre_tokenizer Split"); });
    EXPECT_NE(msg.find("tok.json: pre_tokenizer Split: the pattern does not compile: "), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(PretokenizerChain, SmolLm2DigitsThenGpt2SplitAsHuggingFace) {
    const auto chain = PretokenizerChain::from_json(
        sequence({{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true)}), "t");
    const Cases cases = {
        {"Year 2024: 3.14 apples, 1,000 pears", {"Year", " ", "2", "0", "2", "4", ":", " ", "3", ".", "1", "4", " apples", ",", " ", "1", ",", "0", "0", "0", " pears"}},
        {"it's x12y \u0663\u0664 \u00bd!", {"it", "'s", " x", "1", "2", "y", " ", "\u0663", "\u0664", " ", "\u00bd", "!"}},
        {"  12  ab", {"  ", "1", "2", " ", " ab"}},
    };
    for (const auto& [text, want] : cases) EXPECT_EQ(split(*chain, text), want) << text;
    EXPECT_FALSE(chain->is_gpt2());
    EXPECT_TRUE(chain->cuts_at_spaces());
}

TEST(PretokenizerChain, DigitRunsAndStringSplits) {
    const auto runs = PretokenizerChain::from_json(
        sequence({{{"type", "Digits"}, {"individual_digits", false}}, byte_level(true)}), "t");
    EXPECT_EQ(split(*runs, "Year 2024: 3.14 apples, 1,000 pears"),
              (std::vector<std::string>{"Year", " ", "2024", ":", " ", "3", ".", "14", " apples", ",", " ", "1",
                                        ",", "000", " pears"}));
    const json literal = {{"type", "Split"}, {"pattern", {{"String", "--"}}}, {"behavior", "Isolated"}, {"invert", false}};
    const auto dashes = PretokenizerChain::from_json(sequence({literal, byte_level(false)}), "t");
    EXPECT_EQ(split(*dashes, "a--b---c --"), (std::vector<std::string>{"a", "--", "b", "--", "-c ", "--"}));
    EXPECT_FALSE(dashes->cuts_at_spaces());  // a pattern lmforge cannot reason about
}

TEST(PretokenizerChain, Gpt2sSplitIsTheFastPath) {
    EXPECT_TRUE(PretokenizerChain::from_json(byte_level(true), "t")->is_gpt2());
    EXPECT_TRUE(PretokenizerChain::from_json({{"type", "ByteLevel"}}, "t")->is_gpt2());  // use_regex defaults to true
    const std::string hf_gpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
    EXPECT_TRUE(PretokenizerChain::from_json(sequence({split_step(hf_gpt2), byte_level(false)}), "t")->is_gpt2());
    const auto llama = PretokenizerChain::from_json(llama3_pre(), "t");
    EXPECT_FALSE(llama->is_gpt2());
    EXPECT_TRUE(llama->cuts_at_spaces());
    EXPECT_EQ(json::parse(llama->json_text()), llama3_pre());
}

TEST(PretokenizerChain, UnsupportedStepsAreRefusedByNameInOneLine) {
    const std::vector<std::pair<json, std::string>> cases = {
        {{{"type", "Metaspace"}, {"replacement", "\u2581"}}, R"(pre_tokenizer "Metaspace" is not supported)"},
        {sequence({{{"type", "Whitespace"}}, byte_level(false)}), R"(pre_tokenizer "Whitespace" is not supported)"},
        {sequence({{{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}},
                   byte_level(false)}),
         R"(pre_tokenizer Split with behavior "MergedWithPrevious" is not supported)"},
        {sequence({{{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Isolated"}, {"invert", true}},
                   byte_level(false)}),
         "pre_tokenizer Split with invert true is not supported"},
        {{{"type", "ByteLevel"}, {"add_prefix_space", true}}, "pre_tokenizer ByteLevel with add_prefix_space true is not supported"},
        {sequence({byte_level(false), split_step(kLlama3)}), R"(pre_tokenizer "Split" after ByteLevel (it must come last) is not supported)"},
        {split_step(kLlama3), "pre_tokenizer Split without a ByteLevel step is not supported"},
        {json(), "pre_tokenizer null without a ByteLevel step is not supported"},
    };
    for (const auto& [pre, want] : cases) {
        const std::string msg = test::input_error_of([&] { PretokenizerChain::from_json(pre, "tok.json"); });
        EXPECT_NE(msg.find("tok.json: " + want), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
}

}  // namespace
}  // namespace lmforge
