#include "tokenizer/pretokenizer_chain.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/regex_pretokenizer.h"
#include "tokenizer/unicode.h"

namespace lmforge {

using json = nlohmann::json;

namespace {

// GPT-2's pattern as Hugging Face's ByteLevel writes it, and as tiktoken does ("r50k"): both
// split as pretokenize_gpt2 does.
constexpr std::string_view kGpt2Patterns[] = {
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
    R"('(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+$|\s+(?!\S)|\s)",
};
// Llama 3's (tiktoken's cl100k as Hugging Face writes it) and Qwen2's (single digits). In
// both, a space after a character that is not white space starts a match: no alternative
// takes a space after anything but white space, and the one lookahead, (?!\S), is at the end
// of a run of white space.
constexpr std::string_view kSpaceCutPatterns[] = {
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
};

template <size_t N>
bool one_of(const std::string_view (&patterns)[N], std::string_view pattern) {
    return std::find(std::begin(patterns), std::end(patterns), pattern) != std::end(patterns);
}

constexpr const char* kSupported =
    "lmforge reads byte-level BPE pre-tokenizers: Split (behavior Isolated), Digits and a closing ByteLevel "
    "without a prefix space, alone or in a Sequence";

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
    throw InputError(fmt::format("{}: {} is not supported", path, what), kSupported);
}

std::string type_of(const json& j) {
    return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : j.dump();
}

bool flag(const json& j, const char* key, bool fallback) {
    return j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : fallback;
}

// Each number character a piece of its own (individual), or each run of them; the text between
// stays whole. "Number" is \p{N}, as Rust's char::is_numeric that Hugging Face's Digits uses.
template <class Piece>
void split_digits(std::string_view text, bool individual, Piece&& piece) {
    const auto* const begin = reinterpret_cast<const unsigned char*>(text.data());
    const auto* const end = begin + text.size();
    size_t start = 0;  // of the current piece
    bool in_digits = false;
    for (const unsigned char* p = begin; p < end;) {
        uint32_t cp;
        const int len = utf8_decode(p, end, cp);
        const auto at = static_cast<size_t>(p - begin);
        const bool digit = char_class(cp) == CharClass::Number;
        if (at > start && (digit != in_digits || (digit && individual))) {
            piece(text.substr(start, at - start));
            start = at;
        }
        in_digits = digit;
        p += len;
    }
    if (start < text.size()) piece(text.substr(start));
}

}  // namespace

std::shared_ptr<const PretokenizerChain> PretokenizerChain::from_json(const json& pre, const std::string& path) {
    auto chain = std::make_shared<PretokenizerChain>();
    bool byte_level = false;
    if (!pre.is_null()) chain->add_steps(pre, path, byte_level);
    if (!byte_level) {
        refuse(path, fmt::format("pre_tokenizer {} without a ByteLevel step", pre.is_null() ? "null" : type_of(pre)));
    }
    chain->json_text_ = pre.dump();
    return chain;
}

void PretokenizerChain::add_steps(const json& pre, const std::string& path, bool& byte_level) {
    const std::string type = type_of(pre);
    if (byte_level) refuse(path, fmt::format("pre_tokenizer \"{}\" after ByteLevel (it must come last)", type));
    if (type == "Sequence") {
        if (!pre.contains("pretokenizers") || !pre["pretokenizers"].is_array()) {
            throw InputError(fmt::format("{}: pre_tokenizer Sequence has no \"pretokenizers\" list", path),
                             "the file is damaged");
        }
        for (const json& step : pre["pretokenizers"]) add_steps(step, path, byte_level);
    } else if (type == "ByteLevel") {
        if (flag(pre, "add_prefix_space", false)) refuse(path, "pre_tokenizer ByteLevel with add_prefix_space true");
        if (flag(pre, "use_regex", true)) steps_.push_back({Kind::Gpt2, nullptr});
        byte_level = true;
    } else if (type == "Digits") {
        steps_.push_back({flag(pre, "individual_digits", false) ? Kind::Digit : Kind::DigitRun, nullptr});
    } else if (type == "Split") {
        const std::string behavior = pre.value("behavior", std::string());
        if (behavior != "Isolated") refuse(path, fmt::format("pre_tokenizer Split with behavior \"{}\"", behavior));
        if (flag(pre, "invert", false)) refuse(path, "pre_tokenizer Split with invert true");
        const json pattern = pre.value("pattern", json());
        const bool literal = pattern.is_object() && pattern.contains("String") && pattern["String"].is_string();
        if (!literal && !(pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string())) {
            throw InputError(fmt::format("{}: pre_tokenizer Split's pattern {} is neither {{\"Regex\": ...}} nor "
                                         "{{\"String\": ...}}", path, pattern.dump()),
                             "the file is damaged");
        }
        const std::string text = pattern[literal ? "String" : "Regex"];
        if (!literal && one_of(kGpt2Patterns, text)) {
            steps_.push_back({Kind::Gpt2, nullptr});
            return;
        }
        auto regex = std::make_shared<RegexSplitter>(text, literal, path + ": pre_tokenizer Split");
        steps_.push_back({Kind::Regex, std::move(regex), !literal && one_of(kSpaceCutPatterns, text)});
    } else {
        refuse(path, fmt::format("pre_tokenizer \"{}\"", type));
    }
}

bool PretokenizerChain::is_gpt2() const { return steps_.size() == 1 && steps_[0].kind == Kind::Gpt2; }

bool PretokenizerChain::cuts_at_spaces() const {
    for (const Step& s : steps_) {
        if (s.kind == Kind::Regex && !s.known_pattern) return false;
    }
    return true;
}

void PretokenizerChain::split(std::string_view text, const std::function<void(std::string_view)>& piece) const {
    apply(0, text, piece);
}

void PretokenizerChain::apply(size_t step, std::string_view text,
                              const std::function<void(std::string_view)>& piece) const {
    if (step == steps_.size()) {
        if (!text.empty()) piece(text);
        return;
    }
    // One pointer captured: the std::function below holds it without allocating.
    struct Next {
        const PretokenizerChain* chain;
        size_t step;
        const std::function<void(std::string_view)>* piece;
    } const next{this, step + 1, &piece};
    const auto on = [n = &next](std::string_view part) { n->chain->apply(n->step, part, *n->piece); };
    const Step& s = steps_[step];
    switch (s.kind) {
        case Kind::Gpt2: pretokenize_gpt2(text, on); break;
        case Kind::Regex: s.regex->split(text, on); break;
        case Kind::Digit: split_digits(text, true, on); break;
        case Kind::DigitRun: split_digits(text, false, on); break;
    }
}

}  // namespace lmforge
