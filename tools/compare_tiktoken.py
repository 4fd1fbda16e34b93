#!/usr/bin/env python3
"""Compares lmforge's GPT-2 tokenizer with tiktoken, live, document by document, on the
corpora (and any extra text files given): ids must be equal, and decoding must give the text
back. Prints the first difference of each mismatching document.

    pip install tiktoken && python3 tools/compare_tiktoken.py [--lmforge build/release/lmforge] [FILE...]
"""
import argparse
import json
import os
import subprocess
import sys

from tiktoken_gpt2 import CORPORA, corpus_documents, gpt2_encoding

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lmforge_ids(binary, docs, specials):
    lines = "".join(json.dumps({"text": d}) + "\n" for d in docs)
    cmd = [binary, "tokenize", "--jsonl-field", "text"] + (["--allow-special"] if specials else [])
    out = subprocess.run(cmd, input=lines.encode(), check=True, capture_output=True).stdout.decode()
    return [[int(x) for x in line.split()] for line in out.splitlines()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lmforge", default=os.path.join(ROOT, "build", "release", "lmforge"))
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    enc = gpt2_encoding()
    sets = [(name, corpus_documents(name)) for name in CORPORA]
    sets += [(f, [open(f, encoding="utf-8", newline="").read()]) for f in args.files]
    failures = 0
    for name, docs in sets:
        for specials in (False, True):
            ours = lmforge_ids(args.lmforge, docs, specials)
            theirs = [enc.encode(d, allowed_special="all") if specials else enc.encode_ordinary(d) for d in docs]
            bad = 0
            for i, (a, b) in enumerate(zip(ours, theirs)):
                if a != b:
                    bad += 1
                    k = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
                    print(f"  {name} document {i}: first difference at token {k}: lmforge {a[k:k+5]} "
                          f"tiktoken {b[k:k+5]} near {enc.decode(b[max(0, k-5):k+5])!r}")
                elif enc.decode(a) != docs[i] and not specials:
                    bad += 1
                    print(f"  {name} document {i}: decoding does not give the text back")
            if len(ours) != len(theirs):
                bad += 1
                print(f"  {name}: {len(ours)} documents from lmforge, {len(theirs)} from tiktoken")
            tokens = sum(len(x) for x in theirs)
            mode = "encode (specials allowed)" if specials else "encode_ordinary"
            print(f"{name:14} {mode:26} {len(docs):6} documents {tokens:9} tokens: "
                  f"{'identical' if bad == 0 else f'{bad} differ'}")
            failures += bad
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
