#!/usr/bin/env python3
"""Checks lmforge's reading of Hugging Face tokenizer.json files against the real thing: the
`tokenizers` library (PyPI) builds GPT-2's tokenizer from the data home's encoder.json and
vocab.bpe and writes its tokenizer.json; lmforge loads that file and must give tiktoken's ids,
document by document, on the Unicode stress text and the State of the Union addresses.

    pip install tokenizers tiktoken && python3 tools/check_hf_tokenizer_json.py [--lmforge build/release/lmforge]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from tiktoken_gpt2 import corpus_documents, data_home, gpt2_encoding

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lmforge", default=os.path.join(ROOT, "build", "release", "lmforge"))
    args = ap.parse_args()
    subprocess.run([args.lmforge, "data", "get", "gpt2-tokenizer", "sotu"], check=True, capture_output=True)
    gpt2 = os.path.join(data_home(), "gpt2-tokenizer")
    hf = Tokenizer(models.BPE.from_file(os.path.join(gpt2, "encoder.json"), os.path.join(gpt2, "vocab.bpe")))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([AddedToken("<|endoftext|>", special=True)])
    stress = open(os.path.join(ROOT, "tests", "fixtures", "tokenizer", "unicode_stress.txt"), encoding="utf-8", newline="").read()
    docs = [stress] + corpus_documents("sotu")
    enc = gpt2_encoding()
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "tokenizer.json")
        hf.save(path)
        lines = "".join(json.dumps({"text": d}) + "\n" for d in docs)
        out = subprocess.run([args.lmforge, "tokenize", "--tokenizer", path, "--jsonl-field", "text"],
                             input=lines.encode(), check=True, capture_output=True).stdout.decode().splitlines()
    ours = [[int(x) for x in line.split()] for line in out]
    bad = [i for i, d in enumerate(docs) if ours[i] != enc.encode_ordinary(d)]
    hf_bad = [i for i, d in enumerate(docs) if hf.encode(d).ids != enc.encode_ordinary(d)]
    print(f"tokenizer.json written by tokenizers {__import__('tokenizers').__version__}: {len(docs)} documents, "
          f"lmforge {'equals' if not bad else f'differs from'} tiktoken on {len(docs) - len(bad)} of them"
          f" (tokenizers itself: {len(docs) - len(hf_bad)})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
