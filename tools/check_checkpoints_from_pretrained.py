#!/usr/bin/env python3
"""Checks that transformers' from_pretrained loads an lmforge run's checkpoint directories as
they are, with no export: GPT-2 and Llama language models (AutoModelForCausalLM, with
AutoTokenizer from the same directory), GPT-2 and Llama classifiers
(AutoModelForSequenceClassification, id2label the run's classes) and a BERT masked LM
(AutoModelForMaskedLM) give lmforge's own logits (lmforge logits --output) within 1e-4, on best/,
final/ and a step checkpoint; so does `lmforge export` of the Llama model. A Llama trained on a
tokenizer.json of Llama 3's kind (PyPI tokenizers) carries it: AutoTokenizer gives lmforge's
ids. And back: the models saved by transformers in shards (max_shard_size) import into lmforge
with the same logits.

    python3 tools/check_checkpoints_from_pretrained.py --lmforge build/release/lmforge
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSequenceClassification,
                          AutoTokenizer)

TOLERANCE = 1e-4


def run(*cmd, stdin=None):
    r = subprocess.run(cmd, capture_output=True, text=True, input=stdin)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def texts(n, seed=5):
    rng = random.Random(seed)
    cue = {"sport": ["goal", "match"], "weather": ["rain", "wind"], "food": ["bread", "soup"]}
    filler = "the a today we saw some very and then it".split()
    out = []
    for _ in range(n):
        label = rng.choice(sorted(cue))
        words = [rng.choice(filler) for _ in range(rng.randint(3, 8))]
        words[rng.randrange(len(words))] = rng.choice(cue[label])
        out.append((" ".join(words), label))
    return out


def config(work, name, task, preset, data, extra=""):
    return write(os.path.join(work, f"{name}.toml"), f"""[model]
preset = "{preset}"
n_layer = 2
n_head = 2
n_embd = 32
block_size = 64
[data]
dir = "{data}"
[train]
task = "{task}"
batch_size = 8
seq_len = 32
max_steps = 12
epochs = 1
threads = 1
precision = "fp32"
[eval]
every = 6
batches = 2
[checkpoint]
every = 6
[sample]
count = 0
[run]
dir = "{work}/{name}"
{extra}""")


def make_runs(lmforge, work):
    """A GPT-2 LM and a BERT MLM on a byte-level BPE tokenizer trained here, and a classifier."""
    items = texts(600)
    corpus = write(os.path.join(work, "corpus.txt"), "".join(t + ".\n" for t, _ in items))
    run(lmforge, "tokenizer", "train", "--vocab-size", "300", "--input", corpus, "--output", f"{work}/tok")
    run(lmforge, "prepare", "--tokenizer", f"{work}/tok", "--input", corpus, "--output", f"{work}/lm-data")
    labelled = write(os.path.join(work, "labelled.jsonl"),
                     "".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in items))
    run(lmforge, "prepare", "--tokenizer", f"{work}/tok", "--input", labelled, "--label-field", "label",
        "--max-len", "32", "--output", f"{work}/cls-data")
    run(lmforge, "train", config(work, "lm", "lm", "gpt2-nano", f"{work}/lm-data"))
    run(lmforge, "train", config(work, "cls", "classify", "gpt2-nano", f"{work}/cls-data"))
    run(lmforge, "train", config(work, "mlm", "mlm", "bert-tiny", f"{work}/lm-data"))
    run(lmforge, "train", config(work, "llama", "lm", "llama-nano", f"{work}/lm-data"))
    run(lmforge, "train", config(work, "llama-cls", "classify", "llama-nano", f"{work}/cls-data"))
    # A Llama on a tokenizer of Llama 3's kind, trained and written by PyPI tokenizers: its
    # checkpoints carry that tokenizer.json for transformers' fast tokenizer.
    llama3_tokenizer(corpus, f"{work}/tok-llama3")
    run(lmforge, "prepare", "--tokenizer", f"{work}/tok-llama3/tokenizer.json", "--input", corpus,
        "--output", f"{work}/llama3-data")
    run(lmforge, "train", config(work, "llama3-tok", "lm", "llama-nano", f"{work}/llama3-data"))


def llama3_tokenizer(corpus, out):
    """A byte-level BPE with Llama 3's pre-tokenizer, ignore_merges and special tokens, and a
    tokenizer_config.json naming its bos and eos."""
    pattern = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train([corpus], trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                            show_progress=False))
    tok.add_special_tokens([AddedToken("<|begin_of_text|>", special=True), AddedToken("<|end_of_text|>", special=True)])
    os.makedirs(out)
    tok.save(f"{out}/tokenizer.json")
    write(f"{out}/tokenizer_config.json", json.dumps({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}))


def lmforge_logits(lmforge, checkpoint, ids, out):
    run(lmforge, "logits", "--checkpoint", checkpoint, "--ids", " ".join(map(str, ids)), "--output", out,
        "--overwrite")
    return load_file(out)["logits"]


def compare(name, got, want, what="from_pretrained's logits"):
    worst = (got - want).abs().max().item()
    ok = worst <= TOLERANCE * max(1.0, want.abs().max().item())
    print(f"{name}: {what} within {worst:.2e} of lmforge's ({'ok' if ok else 'FAIL'})")
    return ok


def check_causal(lmforge, work, run_name, text):
    """The run's checkpoints loaded by AutoTokenizer and AutoModelForCausalLM."""
    ok = True
    for checkpoint in [f"{run_name}/best", f"{run_name}/final", f"{run_name}/checkpoints/step_000006"]:
        path = os.path.join(work, checkpoint)
        ids = AutoTokenizer.from_pretrained(path)(text)["input_ids"]
        lmforge_ids = [int(i) for i in
                       run(lmforge, "tokenize", "--tokenizer", f"{work}/{run_name}/tokenizer", stdin=text).split()]
        print(f"{checkpoint}: AutoTokenizer's ids {'equal' if ids == lmforge_ids else 'DIFFER FROM'} lmforge's")
        ok &= ids == lmforge_ids
        model = AutoModelForCausalLM.from_pretrained(path).eval()
        with torch.no_grad():
            got = model(torch.tensor([ids])).logits[0]
        ok &= compare(checkpoint, got, lmforge_logits(lmforge, path, ids, f"{work}/logits.safetensors"))
    return ok


def check_sharded_import(lmforge, work, run_name):
    """transformers' shards (save_pretrained past max_shard_size) imported by lmforge."""
    sharded = os.path.join(work, f"{run_name}-sharded")
    AutoModelForCausalLM.from_pretrained(os.path.join(work, f"{run_name}/best")).save_pretrained(
        sharded, max_shard_size="20KB")
    shards = len([f for f in os.listdir(sharded) if f.endswith(".safetensors")])
    run(lmforge, "import", "--hf", sharded, "--output", f"{work}/{run_name}-imported")
    ids = [3, 17, 42, 7]
    ok = compare(f"{run_name}: import of {shards} shards",
                 lmforge_logits(lmforge, f"{work}/{run_name}-imported", ids, f"{work}/l.safetensors"),
                 lmforge_logits(lmforge, f"{work}/{run_name}/best", ids, f"{work}/logits.safetensors"),
                 "the import's logits")
    return ok and shards > 1


def check_classifier(lmforge, work, run_name, text):
    path = os.path.join(work, f"{run_name}/best")
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    ids = AutoTokenizer.from_pretrained(path)(text)["input_ids"]
    with torch.no_grad():
        got = model(torch.tensor([ids])).logits
    ok = compare(f"{run_name}/best", got, lmforge_logits(lmforge, path, ids, f"{work}/logits.safetensors"))
    labels = sorted(model.config.id2label.values())
    print(f"{run_name}/best: id2label {labels}")
    return ok and labels == ["food", "sport", "weather"]


def check_export(lmforge, work, run_name):
    """lmforge export of the run's best/, loaded by from_pretrained."""
    out = os.path.join(work, f"{run_name}-export")
    run(lmforge, "export", "--checkpoint", f"{work}/{run_name}/best", "--hf", out)
    ids = [5, 17, 40, 3, 99, 12]
    model = AutoModelForCausalLM.from_pretrained(out).eval()
    with torch.no_grad():
        got = model(torch.tensor([ids])).logits[0]
    return compare(f"{run_name}: export", got,
                   lmforge_logits(lmforge, f"{work}/{run_name}/best", ids, f"{work}/logits.safetensors"))


def check(lmforge, work):
    text = "we saw some rain today"
    ok = True
    for name in ["lm", "llama"]:
        ok &= check_causal(lmforge, work, name, text)
        ok &= check_sharded_import(lmforge, work, name)
    ok &= check_causal(lmforge, work, "llama3-tok", text)
    ok &= check_export(lmforge, work, "llama")
    ok &= check_classifier(lmforge, work, "cls", text)
    ok &= check_classifier(lmforge, work, "llama-cls", text)
    path = os.path.join(work, "mlm/best")
    model = AutoModelForMaskedLM.from_pretrained(path).eval()
    ids = [5, 17, 40, 3, 99, 12]
    with torch.no_grad():
        got = model(torch.tensor([ids])).logits[0]
    ok &= compare("mlm/best", got, lmforge_logits(lmforge, path, ids, f"{work}/logits.safetensors"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lmforge", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="lmforge-from-pretrained-") as work:
        make_runs(os.path.abspath(args.lmforge), work)
        sys.exit(0 if check(os.path.abspath(args.lmforge), work) else 1)


if __name__ == "__main__":
    main()
