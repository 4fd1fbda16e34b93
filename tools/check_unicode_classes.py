#!/usr/bin/env python3
"""Checks lmforge's character classes (src/tokenizer/unicode_ranges.inc) against tiktoken's,
code point by code point: each assigned code point c is encoded in contexts where its class
decides the pieces — "a{c}a 1{c}1 !{c}! x{c}{c}x" — by both tokenizers, and the ids must agree.

    pip install tiktoken regex && python3 tools/check_unicode_classes.py
"""
import argparse
import json
import os
import subprocess
import sys

import regex

from tiktoken_gpt2 import gpt2_encoding

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lmforge", default=os.path.join(ROOT, "build", "release", "lmforge"))
    args = ap.parse_args()
    assigned = regex.compile(r"\p{Assigned}")
    cps = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and assigned.match(chr(cp))]
    docs = [f"a{c}a 1{c}1 !{c}! x{c}{c}x" for c in map(chr, cps)]
    enc = gpt2_encoding()
    theirs = enc.encode_ordinary_batch(docs)
    lines = "".join(json.dumps({"text": d}) + "\n" for d in docs).encode()
    out = subprocess.run([args.lmforge, "tokenize", "--jsonl-field", "text"], input=lines,
                         check=True, capture_output=True).stdout.decode().splitlines()
    ours = [[int(x) for x in line.split()] for line in out]
    bad = [cp for cp, a, b in zip(cps, ours, theirs) if a != b]
    print(f"{len(cps)} assigned code points checked; {len(bad)} classified differently"
          + (": " + " ".join(f"U+{cp:04X}" for cp in bad[:40]) if bad else ""))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
