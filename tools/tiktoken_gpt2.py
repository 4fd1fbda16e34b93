"""tiktoken's "gpt2" encoding, built from the GPT-2 files in lmforge's data home rather than
downloaded (tiktoken normally fetches them from OpenAI's blob store, which this project does
not reach). The files' sha256 are checked against the ones tiktoken itself pins.

Also: the corpora lmforge's recipes unpack, document by document, and the id hash the
golden files use (FNV-1a 64 over the ids as little-endian int32).
"""
import glob
import json
import os
import struct

import tiktoken
import tiktoken.load
from tiktoken_ext import openai_public


def data_home():
    return os.environ.get("LMFORGE_HOME") or os.path.expanduser("~/.cache/lmforge")


def gpt2_encoding():
    d = os.path.join(data_home(), "gpt2-tokenizer")
    ranks = tiktoken.load.data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=os.path.join(d, "vocab.bpe"),
        encoder_json_file=os.path.join(d, "encoder.json"),
        vocab_bpe_hash="1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
        encoder_json_hash="196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783")
    return tiktoken.Encoding("gpt2", pat_str=openai_public.r50k_pat_str, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=50257)


def corpus_documents(name):
    """The documents of a corpus, in the order the C++ tests read them."""
    home = data_home()
    if name == "moby-dick":
        return [open(os.path.join(home, "moby-dick", "moby_dick.txt"), encoding="utf-8", newline="").read()]
    if name == "sotu":
        return [open(f, encoding="utf-8", newline="").read()
                for f in sorted(glob.glob(os.path.join(home, "sotu", "*.txt")))]
    if name == "spam-assassin":
        with open(os.path.join(home, "spam-assassin", "spam_assassin.jsonl"), encoding="utf-8") as f:
            return [json.loads(line)["text"] for line in f]
    raise ValueError(name)


CORPORA = ["moby-dick", "sotu", "spam-assassin"]


def ids_hash(ids):
    h = 0xcbf29ce484222325
    for b in struct.pack(f"<{len(ids)}i", *ids):
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"
