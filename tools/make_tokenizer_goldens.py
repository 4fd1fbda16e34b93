#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer/gpt2_goldens.json: tiktoken's "gpt2" ids for the Unicode
stress text (in full) and, for Moby Dick, SOTU and the SpamAssassin e-mails, each document's
token count and id hash — what the C++ tests compare lmforge's tokenizer against.

    pip install tiktoken && lmforge data get moby-dick sotu spam-assassin gpt2-tokenizer
    python3 tools/make_tokenizer_goldens.py
"""
import json
import os

import tiktoken

from tiktoken_gpt2 import CORPORA, corpus_documents, gpt2_encoding, ids_hash

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "tokenizer")


def main():
    enc = gpt2_encoding()
    stress = open(os.path.join(FIXTURES, "unicode_stress.txt"), encoding="utf-8", newline="").read()
    out = {
        "tiktoken": tiktoken.__version__,
        "unicode_stress": {
            "ordinary": enc.encode_ordinary(stress),
            "with_specials": enc.encode(stress, allowed_special="all"),
        },
        "corpora": {},
    }
    for name in CORPORA:
        docs = corpus_documents(name)
        ids = enc.encode_ordinary_batch(docs)
        out["corpora"][name] = {
            "documents": len(docs),
            "tokens": sum(len(x) for x in ids),
            "bytes": sum(len(d.encode("utf-8")) for d in docs),
            "counts": [len(x) for x in ids],
            "hashes": [ids_hash(x) for x in ids],
        }
        print(f"{name}: {len(docs)} documents, {out['corpora'][name]['tokens']} tokens")
    path = os.path.join(FIXTURES, "gpt2_goldens.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
