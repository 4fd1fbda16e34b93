#include "tokenizer/regex_pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <algorithm>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace lmforge {

namespace {

// Unicode's White_Space (stable since 6.3), which Oniguruma's \s is; PCRE2's \s under UCP also
// takes U+180E, a format character since Unicode 6.3, which Hugging Face leaves to "other".
constexpr std::string_view kWhiteSpace =
    "\\t\\n\\x0b\\f\\r\\x20\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}";
// Oniguruma's \w; PCRE2 10.42's \w under UCP leaves out marks and connectors.
constexpr std::string_view kWord = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";

std::string pcre2_message(int code) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(code, buffer, sizeof(buffer));
    return reinterpret_cast<const char*>(buffer);
}

// What each thread matches with: match data for the whole match's offsets (patterns with
// groups fill only that pair, which is all a split needs), and a JIT stack larger than PCRE2's
// 32 KB default, for backtracking over long runs of white space.
struct ThreadState {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    pcre2_match_context* context = pcre2_match_context_create(nullptr);
    pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);

    ThreadState() {
        if (data == nullptr || context == nullptr || stack == nullptr) throw std::bad_alloc();
        pcre2_jit_stack_assign(context, nullptr, stack);
    }
    ~ThreadState() {
        pcre2_jit_stack_free(stack);
        pcre2_match_context_free(context);
        pcre2_match_data_free(data);
    }
};

ThreadState& thread_state() {
    thread_local ThreadState state;
    return state;
}

// The offset just past the character at `at` (one byte for a byte that starts no valid one).
size_t next_char(std::string_view text, size_t at) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    uint32_t cp;
    return at + static_cast<size_t>(utf8_decode(p + at, p + text.size(), cp));
}

}  // namespace

std::string oniguruma_compatible(const std::string& pattern, const std::string& where) {
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < pattern.size(); i++) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[++i];
            const bool negated = e == 'S' || e == 'W';
            if (e != 's' && e != 'S' && e != 'w' && e != 'W') {
                out += c;
                out += e;
                continue;
            }
            if (negated && in_class) {
                throw InputError(fmt::format("{}: \\{} inside a character class is not supported", where, e),
                                 "lmforge runs Hugging Face's patterns with PCRE2 and rewrites \\s and \\w "
                                 "to Oniguruma's meaning, which it cannot do there");
            }
            const std::string_view set = (e == 's' || e == 'S') ? kWhiteSpace : kWord;
            out += in_class ? std::string(set) : fmt::format("[{}{}]", negated ? "^" : "", set);
            continue;
        }
        out += c;
        if (!in_class && c == '[') {
            in_class = true;
            // A ']' first in the class (after an optional '^') is a literal one.
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
        } else if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
            const size_t close = pattern.find(":]", i + 2);  // a POSIX class, [:alpha:]
            if (close != std::string::npos) {
                out.append(pattern, i + 1, close + 2 - (i + 1));
                i = close + 1;
            }
        } else if (in_class && c == ']') {
            in_class = false;
        }
    }
    return out;
}

struct RegexSplitter::Code {
    pcre2_code* re = nullptr;
    ~Code() { pcre2_code_free(re); }
};

RegexSplitter::RegexSplitter(const std::string& pattern, bool literal, const std::string& where)
    : code_(std::make_unique<Code>()), pattern_(pattern) {
    // UTF: the pattern and the text are UTF-8; UCP: \d, \p{L} and the rest are Unicode's;
    // MATCH_INVALID_UTF: text that is not valid UTF-8 (stray bytes in e-mails) is matched
    // around instead of refused.
    uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
    const std::string compiled = literal ? pattern : oniguruma_compatible(pattern, where);
    options |= literal ? PCRE2_LITERAL : PCRE2_UCP;
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_->re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(compiled.data()), compiled.size(), options, &error,
                              &offset, nullptr);
    if (code_->re == nullptr) {
        throw InputError(fmt::format("{}: the pattern does not compile: {} (at offset {} of {})", where,
                                     pcre2_message(error), offset, compiled),
                         "the pattern must be a regular expression PCRE2 reads as Oniguruma does");
    }
    // Where the JIT is unavailable (no JIT for this CPU), pcre2_match interprets: same results.
    pcre2_jit_compile(code_->re, PCRE2_JIT_COMPLETE);
}

RegexSplitter::~RegexSplitter() = default;

void RegexSplitter::split(std::string_view text, const std::function<void(std::string_view)>& piece) const {
    ThreadState& state = thread_state();
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t from = 0;  // where the next search starts
    size_t done = 0;  // the end of the last piece given
    while (from <= text.size()) {
        const int rc = pcre2_match(code_->re, subject, text.size(), from, 0, state.data, state.context);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {  // rc 0 is a match whose groups did not fit the match data: still a match
            throw Error(fmt::format("pre-tokenizer pattern '{}' failed on a text of {} bytes: {}", pattern_,
                                    text.size(), pcre2_message(rc)));
        }
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
        const size_t start = ovector[0], end = ovector[1];
        if (end <= start) {
            // Empty: no piece of its own, but the text before it is one (Hugging Face splits
            // "abxxc" on x* into a, b, xx, c); search on from the next character.
            if (start >= text.size()) break;
            if (start > done) piece(text.substr(done, start - done));
            done = std::max(done, start);
            from = next_char(text, start);
            continue;
        }
        if (start > done) piece(text.substr(done, start - done));
        piece(text.substr(start, end - start));
        done = from = end;
    }
    if (done < text.size()) piece(text.substr(done));
}

}  // namespace lmforge
