#!/usr/bin/env python3
"""Checks lmforge's LoRA against PyPI peft on runs made here: a Llama base and a LoRA run over it
(a language model, and a classifier whose head trains whole), exported by lmforge as a Hugging
Face base (--hf), PEFT adapters (--peft) and merged models (--hf of the LoRA run). peft's
PeftModel.from_pretrained(base, adapters) must give lmforge's logits of the LoRA checkpoint,
and merge_and_unload() the logits of lmforge's merged export (from_pretrained), within 1e-4.

    python3 tools/check_lora_peft.py --lmforge build/release/lmforge
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

TOLERANCE = 1e-4
TARGETS = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"


def run(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def config(work, name, task, data, extra_model="", extra=""):
    return write(os.path.join(work, f"{name}.toml"), f"""[model]
preset = "llama-nano"
n_layer = 2
n_head = 4
n_kv_head = 2
n_embd = 32
block_size = 64
{extra_model}[data]
dir = "{data}"
[train]
task = "{task}"
batch_size = 8
seq_len = 32
max_steps = 12
epochs = 1
threads = 1
precision = "fp32"
[optim]
lr = 1e-2
warmup_steps = 2
[eval]
every = 6
batches = 2
[sample]
count = 0
[run]
dir = "{work}/{name}"
{extra}""")


def make_runs(lmforge, work):
    rng = random.Random(3)
    cue = {"sport": ["goal", "match"], "weather": ["rain", "wind"], "food": ["bread", "soup"]}
    filler = "the a today we saw some very and then it".split()
    items = []
    for _ in range(400):
        label = rng.choice(sorted(cue))
        words = [rng.choice(filler) for _ in range(rng.randint(3, 8))]
        words[rng.randrange(len(words))] = rng.choice(cue[label])
        items.append((" ".join(words), label))
    corpus = write(os.path.join(work, "corpus.txt"), "".join(t + ".\n" for t, _ in items))
    labelled = write(os.path.join(work, "labelled.jsonl"),
                     "".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in items))
    run(lmforge, "prepare", "--tokenizer", "char", "--input", corpus, "--output", f"{work}/lm-data")
    run(lmforge, "prepare", "--tokenizer", f"{work}/lm-data", "--input", labelled, "--label-field", "label",
        "--max-len", "32", "--output", f"{work}/cls-data")
    run(lmforge, "train", config(work, "base", "lm", f"{work}/lm-data"))
    lora = f"[lora]\nrank = 4\nalpha = 8\ndropout = 0.1\ntargets = \"{TARGETS}\"\n"
    init = f"init_from = \"{work}/base/final\"\n"
    run(lmforge, "train", config(work, "lora", "lm", f"{work}/lm-data", init, lora))
    run(lmforge, "train", config(work, "lora-cls", "classify", f"{work}/cls-data", init,
                                 "[lora]\nrank = 2\nalpha = 4\ntargets = \"q_proj,v_proj\"\n"))
    run(lmforge, "export", "--checkpoint", f"{work}/base/final", "--hf", f"{work}/base-hf")
    for name in ["lora", "lora-cls"]:
        run(lmforge, "export", "--checkpoint", f"{work}/{name}/best", "--peft", f"{work}/{name}-adapter")
        run(lmforge, "export", "--checkpoint", f"{work}/{name}/best", "--hf", f"{work}/{name}-merged")


def lmforge_logits(lmforge, checkpoint, ids, out):
    run(lmforge, "logits", "--checkpoint", checkpoint, "--ids", " ".join(map(str, ids)), "--output", out,
        "--overwrite")
    return load_file(out)["logits"]


def compare(name, got, want):
    worst = (got - want).abs().max().item()
    ok = worst <= TOLERANCE * max(1.0, want.abs().max().item())
    print(f"{name}: within {worst:.2e} ({'ok' if ok else 'FAIL'})")
    return ok


def check(lmforge, work):
    ok = True
    ids = [5, 17, 3, 9, 12, 4, 20]
    out = f"{work}/logits.safetensors"
    for name, auto, labels in [("lora", AutoModelForCausalLM, None),
                               ("lora-cls", AutoModelForSequenceClassification, 3)]:
        extra = {"num_labels": labels} if labels else {}
        base = auto.from_pretrained(f"{work}/base-hf", **extra).eval()
        peft_model = PeftModel.from_pretrained(base, f"{work}/{name}-adapter").eval()
        want = lmforge_logits(lmforge, f"{work}/{name}/best", ids, out)
        with torch.no_grad():
            got = peft_model(torch.tensor([ids])).logits
            got = got[0] if labels is None else got
            ok &= compare(f"{name}: peft's PeftModel.from_pretrained(base, lmforge's adapters) logits, "
                          "against lmforge's", got, want)
            merged = peft_model.merge_and_unload().eval()
            merged_logits = merged(torch.tensor([ids])).logits
            merged_logits = merged_logits[0] if labels is None else merged_logits
            exported = auto.from_pretrained(f"{work}/{name}-merged").eval()
            exported_logits = exported(torch.tensor([ids])).logits
            exported_logits = exported_logits[0] if labels is None else exported_logits
        ok &= compare(f"{name}: lmforge's merged export, against peft's merge_and_unload()", exported_logits,
                      merged_logits)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lmforge", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="lmforge-peft-") as work:
        lmforge = os.path.abspath(args.lmforge)
        make_runs(lmforge, work)
        sys.exit(0 if check(lmforge, work) else 1)


if __name__ == "__main__":
    main()
