#!/usr/bin/env python3
"""Checks lmforge's reading of Llama-class tokenizer.json files against the tokenizers library
(PyPI) that writes them. Two byte-level BPE tokenizers are trained here on the State of the
Union addresses, each with a real model family's settings:

  llama3   Split on Llama 3's pattern (Isolated) + ByteLevel without its regex; ignore_merges;
           Llama 3's special tokens after the vocabulary, and one added token that is not
           special ("United States", which Hugging Face finds inside any text);
  smollm2  Digits(individual_digits) + ByteLevel with GPT-2's regex, as SmolLM2's
           tokenizer.json; merges alone decide (no ignore_merges); its special tokens first.

Each is saved as tokenizer.json beside a tokenizer_config.json naming bos and eos. lmforge
encodes every address and every SpamAssassin e-mail (`lmforge tokenize --jsonl-field`, one
process, all cores) and must give tokenizers' ids exactly, document by document (specials as
text on both sides: encode_special_tokens); then decodes all the ids back to the texts.

    python3 tools/check_llama_tokenizers.py [--lmforge build/release/lmforge]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from tiktoken_gpt2 import corpus_documents

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
SMOLLM2_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
VOCAB = 8192


def train_llama3(texts):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tok.add_special_tokens([AddedToken(t, special=True) for t in LLAMA3_SPECIALS])  # after the vocabulary
    tok.add_tokens([AddedToken("United States", special=False)])
    return tok, {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}


def train_smollm2(texts):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
        special_tokens=SMOLLM2_SPECIALS))  # ids 0, 1, 2, as SmolLM2's
    return tok, {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "pad_token": "<|im_end|>"}


def lmforge(args, argv, data):
    return subprocess.run([args.lmforge] + argv, input=data, check=True, capture_output=True).stdout


def check(args, name, tok, config, docs, work):
    """The number of documents lmforge encodes as tokenizers does, and the ids compared."""
    d = os.path.join(work, name)
    os.makedirs(d)
    path = os.path.join(d, "tokenizer.json")
    tok.save(path)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    tok.encode_special_tokens = True  # special tokens' text stays text, as lmforge's encode_ordinary
    want = [e.ids for e in tok.encode_batch_fast(docs, add_special_tokens=False)]
    lines = "".join(json.dumps({"text": t}) + "\n" for t in docs).encode()
    out = lmforge(args, ["tokenize", "--tokenizer", path, "--jsonl-field", "text"], lines)
    got = [[int(x) for x in line.split()] for line in out.decode().splitlines()]
    bad = [i for i in range(len(docs)) if i >= len(got) or got[i] != want[i]]
    for i in bad[:3]:
        g = got[i] if i < len(got) else []
        at = next((k for k in range(min(len(g), len(want[i]))) if g[k] != want[i][k]), min(len(g), len(want[i])))
        print(f"{name}: document {i} differs at id {at}: lmforge {g[at:at + 8]}, tokenizers {want[i][at:at + 8]}"
              f" ({tok.decode(want[i][max(0, at - 4):at + 8])!r})")
    # The ids as lmforge printed them (equal to tokenizers' where the check passes), decoded in one go.
    decoded = lmforge(args, ["tokenize", "--tokenizer", path, "--decode"], out.replace(b"\n", b" "))
    round_trip = decoded == "".join(docs).encode()
    print(f"{name}: {len(docs) - len(bad)} of {len(docs)} documents equal ({sum(map(len, want))} ids, vocabulary "
          f"{tok.get_vocab_size()}); decoding all the ids gives the texts back: {'yes' if round_trip else 'NO'}")
    return not bad and round_trip


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lmforge", default=os.path.join(ROOT, "build", "release", "lmforge"))
    args = ap.parse_args()
    start = time.time()
    subprocess.run([args.lmforge, "data", "get", "sotu", "spam-assassin"], check=True, capture_output=True)
    sotu = corpus_documents("sotu")
    docs = sotu + corpus_documents("spam-assassin")
    ok = True
    with tempfile.TemporaryDirectory() as work:
        for name, train in [("llama3", train_llama3), ("smollm2", train_smollm2)]:
            tok, config = train(sotu)
            ok = check(args, name, tok, config, docs, work) and ok
    print(f"tokenizers {__import__('tokenizers').__version__}: {len(sotu)} addresses and {len(docs) - len(sotu)} "
          f"e-mails, two tokenizers, {time.time() - start:.1f} s: {'equal' if ok else 'DIFFERENT'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
