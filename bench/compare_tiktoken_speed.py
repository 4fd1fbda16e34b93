#!/usr/bin/env python3
"""Tokenizer speed, lmforge against tiktoken (PyPI, the Rust original), measured in one run:
GPT-2 encode_ordinary throughput in MB/s with 1 and 2 threads on
  long   the 233 State of the Union addresses (46 KB each on average),
  short  the same text cut into documents of about 200 bytes (at a space),
  mail   the 6,046 SpamAssassin e-mails (5.6 KB each on average, raw headers and all),
  book   Moby Dick as one 1.2 MB document.
The two alternate, best of several repeats each.

    pip install tiktoken && lmforge data get sotu moby-dick gpt2-tokenizer
    python3 bench/compare_tiktoken_speed.py
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import tiktoken  # noqa: E402

from tiktoken_gpt2 import data_home, gpt2_encoding  # noqa: E402


def cut(texts, size):
    """Each text cut at the first space after every `size` bytes (as tokenizer_bench --split)."""
    out = []
    for t in texts:
        b, at = t.encode("utf-8"), 0
        while at < len(b):
            end = b.find(b" ", at + size)
            end = len(b) if end < 0 else end
            out.append(b[at:end].decode("utf-8"))
            at = end
    return out


def tiktoken_mb_s(enc, docs, threads, repeat):
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        if threads == 1:
            for d in docs:
                enc.encode_ordinary(d)
        else:
            enc.encode_ordinary_batch(docs, num_threads=threads)
        best = min(best, time.perf_counter() - t)
    return nbytes / best / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "release", "bench", "tokenizer_bench"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    home = data_home()
    sotu = sorted(glob.glob(os.path.join(home, "sotu", "*.txt")))
    book = [os.path.join(home, "moby-dick", "moby_dick.txt")]
    enc = gpt2_encoding()
    read = lambda files: [open(f, encoding="utf-8", newline="").read() for f in files]  # noqa: E731
    mail = [os.path.join(home, "spam-assassin", "spam_assassin.jsonl")]
    mails = [json.loads(line)["text"] for line in open(mail[0], encoding="utf-8")]
    sets = [("long", sotu, [], read(sotu)), ("short", sotu, ["--split", "200"], cut(read(sotu), 200)),
            ("mail", mail, ["--jsonl", "text"], mails), ("book", book, [], read(book))]
    print(f"tiktoken {tiktoken.__version__} (PyPI, native); best of {args.repeat}; MB/s of UTF-8 text\n")
    print(f"{'set':6} {'docs':>6} {'threads':>7} {'lmforge':>9} {'tiktoken':>9} {'ratio':>6}")
    for name, files, flags, docs in sets:
        out = subprocess.run([args.bench, "--threads", str(args.threads), "--repeat", str(args.repeat)]
                             + flags + files, check=True, capture_output=True, text=True).stdout
        ours = {j["threads"]: j for j in map(json.loads, out.splitlines())}
        for threads in range(1, args.threads + 1):
            theirs = tiktoken_mb_s(enc, docs, threads, args.repeat)
            o = ours[threads]
            print(f"{name:6} {o['documents']:6} {threads:7} {o['mb_per_s']:9.1f} {theirs:9.1f} "
                  f"{o['mb_per_s'] / theirs:5.2f}x")


if __name__ == "__main__":
    main()
