// GPT-2's pre-tokenizer, written out by hand instead of run through a regex engine. It splits
// text into the pieces BPE merges within, exactly as tiktoken's pattern for "gpt2" does:
//
//   '(?:[sdmt]|ll|ve|re) | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+$ | \s+(?!\S) | \s
//
// At each position the first alternative that matches wins:
//  1. a contraction: an ASCII apostrophe and s, d, m, t, ll, ve or re (lower case only);
//  2. an optional single space (U+0020) and a run of letters, or of numbers, or of "other"
//     characters (neither space, letter nor number; the apostrophe is one);
//  3. a run of white space: all of it at the end of the text or before more white space;
//     before a non-space character, all but its last character (which then starts the next
//     piece, e.g. " word"), or the single character if the run is one long.
#pragma once

#include <string_view>

#include "tokenizer/unicode.h"

namespace lmforge {

// Calls piece(std::string_view) for each piece of text, in order; the pieces concatenate to text.
template <class Piece>
void pretokenize_gpt2(std::string_view text, Piece&& piece) {
    const auto* const begin = reinterpret_cast<const unsigned char*>(text.data());
    const auto* const end = begin + text.size();
    const auto emit = [&](const unsigned char* a, const unsigned char* b) {
        piece(std::string_view(reinterpret_cast<const char*>(a), static_cast<size_t>(b - a)));
    };
    // The class of the character at p, and its length.
    const auto classify = [&](const unsigned char* p, int& len) {
        if (*p < 0x80) {  // ASCII fast path
            len = 1;
            const unsigned char c = *p;
            if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return CharClass::Letter;
            if (c >= '0' && c <= '9') return CharClass::Number;
            if (c == ' ' || (c >= '\t' && c <= '\r')) return CharClass::Space;
            return CharClass::Other;
        }
        uint32_t cp;
        len = utf8_decode(p, end, cp);
        return char_class(cp);
    };
    // The end of the run of characters of class cls that starts at p.
    const auto run_end = [&](const unsigned char* p, CharClass cls) {
        int len;
        while (p < end && classify(p, len) == cls) p += len;
        return p;
    };

    const unsigned char* p = begin;
    while (p < end) {
        if (*p == '\'' && p + 1 < end) {  // 1. contractions
            const unsigned char c1 = p[1];
            if (c1 == 's' || c1 == 'd' || c1 == 'm' || c1 == 't') {
                emit(p, p + 2);
                p += 2;
                continue;
            }
            if (p + 2 < end && ((c1 == 'l' && p[2] == 'l') || (c1 == 'v' && p[2] == 'e') ||
                                (c1 == 'r' && p[2] == 'e'))) {
                emit(p, p + 3);
                p += 3;
                continue;
            }
        }
        int len;
        const CharClass cls = classify(p, len);
        if (cls != CharClass::Space) {  // 2. a run, no leading space
            const unsigned char* q = run_end(p + len, cls);
            emit(p, q);
            p = q;
            continue;
        }
        if (*p == ' ' && p + 1 < end) {  // 2. a space and then a run
            int next_len;
            const CharClass next = classify(p + 1, next_len);
            if (next != CharClass::Space) {
                const unsigned char* q = run_end(p + 1 + next_len, next);
                emit(p, q);
                p = q;
                continue;
            }
        }
        // 3. white space: find the run and the start of its last character.
        const unsigned char* last = p;
        const unsigned char* q = p + len;
        while (q < end) {
            int l;
            if (classify(q, l) != CharClass::Space) break;
            last = q;
            q += l;
        }
        const unsigned char* stop = (q == end || last == p) ? q : last;
        emit(p, stop);
        p = stop;
    }
}

}  // namespace lmforge
