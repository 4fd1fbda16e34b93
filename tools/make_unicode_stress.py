#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer/unicode_stress.txt: text that exercises every rule of GPT-2's
pre-tokenizer and the byte-level BPE. Each line targets one thing; every code point is
spelled out here so the file's bytes are reproducible.

    python3 tools/make_unicode_stress.py
"""
import os

LINES = [
    # contractions, in several cases: only lower-case 's 'd 'm 't 'll 've 're are split off
    "it's I'd I'm don't we'll they've you're IT'S I'D I'M DON'T WE'LL THEY'VE YOU'RE It'S We'Ll",
    "'s 'S 'll 'LL 're 'Re ''s '''t rock'n'roll o'clock 'twas ' s ' ll",
    # runs of spaces, tabs, \r\n, trailing and leading white space
    "one  two   three    four     five" + " " * 20 + "six",
    "\ttab\t\tdouble tab\t \t mixed\t",
    "windows line\r\nending\r\n\r\nblank above\r",
    "   leading spaces and trailing   ",
    "\n\n\nthree newlines above",
    # digits: ASCII, long runs, Arabic-Indic, full-width, superscripts, fractions, Roman numerals
    "1 12 123 1234 12345 3.14159 2,718,281 0x1F 1e-9 -42 +7 007",
    "9" * 300,
    "\u0661\u0662\u0663 \uff11\uff12\uff13 x\u00b2 \u00bd \u2167 \u2160\u2161 \u0967\u0968",
    # emoji: single, skin tones, ZWJ sequences, flags, keycaps, variation selectors
    "\U0001F600 \U0001F44D\U0001F3FD \U0001F468\u200D\U0001F469\u200D\U0001F467 \U0001F1FA\U0001F1F8 1\uFE0F\u20E3 \u2764\uFE0F",
    # CJK, kana, Hangul
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01 \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    # combining marks: decomposed accents, Devanagari, Arabic with harakat, Hebrew points
    "cafe\u0301 nai\u0308ve e\u0301\u0301\u0301 \u0928\u092e\u0938\u094d\u0924\u0947 \u0643\u064e\u062a\u064e\u0628\u064e \u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd",
    # scripts written right to left, mixed with left to right
    "English \u0627\u0644\u0639\u0631\u0628\u064a\u0629 English \u05e2\u05d1\u05e8\u05d9\u05ea",
    # exotic spaces: no-break, em, ideographic, thin, line and paragraph separators, NEL
    "a\u00a0b c\u2003d e\u3000f g\u2009h i\u2028j k\u2029l m\u0085n o\u00a0 p",
    # characters that look like space but are not White_Space, and zero-width ones
    "zero\u200bwidth \ufeffbom \u180emongolian \u200ejoiner\u200d x\x1cy\x1dz\x1f",
    # control characters
    "bell\x07 backspace\x08 escape\x1b[0m delete\x7f vertical\x0bform\x0c",
    # the special token inside ordinary text, and its pieces
    "before<|endoftext|>after <|endoftext|> <|endoftext| |endoftext|> <|endoftext|><|endoftext|>",
    # punctuation runs, URLs, code, math
    "!!! ??? ... --- === *** ((( ))) [[]] {{}} <<>> ;; :: ,, \"\" `` ~~ ^^ %% $$ ## @@ && ||",
    "https://example.com/path?q=1&r=two#frag mailto:someone@example.org",
    "def f(x):\n    return x ** 2  # square\n\n\tif (a && b) { c += 1; }",
    "\u2200x\u2208\u211d: x\u00b2\u22650 \u222b\u2080\u00b9 e\u02e3 dx \u2248 1.718 \u03b1\u03b2\u03b3 \u0394\u03a3\u03a9",
    # long runs that take the heap path of the merge (pieces over 64 bytes)
    "a" * 300 + " " + "ab" * 100 + " " + "-" * 150 + " " * 100 + "end",
    "\u00e9" * 80 + " " + "\U0001F600" * 40,
    # letters from other scripts: Greek, Cyrillic, Thai, Georgian, Ethiopic, Cherokee
    "\u0391\u03b8\u03ae\u03bd\u03b1 \u041c\u043e\u0441\u043a\u0432\u0430 \u0e01\u0e23\u0e38\u0e07\u0e40\u0e17\u0e1e \u10d7\u10d1\u10d8\u10da\u10d8\u10e1\u10d8 \u12a0\u12f2\u1235 \u13e3\u13b3\u13a9",
    # the end of the text is white space
    "last line ends with spaces and a tab  \t",
]


def main():
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "tokenizer", "unicode_stress.txt")
    text = "\n".join(LINES)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    print(f"{path}: {len(text)} characters, {len(text.encode('utf-8'))} bytes")


if __name__ == "__main__":
    main()
