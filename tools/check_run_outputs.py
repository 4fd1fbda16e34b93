#!/usr/bin/env python3
"""Checks a run directory's outputs with readers that are not lmforge's own:
  - the TensorBoard event files through TensorBoard's EventAccumulator (PyPI tensorboard), read
    as TensorBoard reads a run: every scalar (train/loss, val/val_loss, multiple_choice/mc_accuracy,
    ...) equals metrics.jsonl's value at that step, once per step even where a resumed run redid
    steps after a crash;
  - plots/loss.png decoded by zlib (chunks, CRCs, image data of the stated size);
  - plots/loss.svg parsed as XML.
With --make-run LMFORGE, first makes a small run itself (prepare + train on generated text, then
as if killed after step 25's events but before its checkpoint, resumed at step 20 with
another learning rate, so that the redone steps' values differ).

    pip install tensorboard && python3 tools/check_run_outputs.py RUN_DIR
    python3 tools/check_run_outputs.py --make-run build/release/lmforge
"""
import argparse
import glob
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def make_run(lmforge, work):
    random.seed(1)
    words = "the sea whale ship captain and of a white was to in old storm".split()
    text = " ".join(random.choice(words) for _ in range(30000))
    with open(os.path.join(work, "corpus.txt"), "w") as f:
        f.write(text)
    # Multiple-choice items in the corpus's words, scored as the run trains (eval.multiple_choice).
    with open(os.path.join(work, "items.jsonl"), "w") as f:
        for i in range(6):
            endings = [" ".join(random.choice(words) for _ in range(3)) for _ in range(4)]
            f.write(json.dumps({"ctx": " ".join(random.choice(words) for _ in range(5)), "endings": endings,
                                "label": i % 4}) + "\n")
    subprocess.run([lmforge, "prepare", "--tokenizer", "char", "--input", os.path.join(work, "corpus.txt"),
                    "--output", os.path.join(work, "data")], check=True, capture_output=True)
    cfg = os.path.join(work, "run.toml")
    with open(cfg, "w") as f:
        f.write(f"""[model]\npreset = "gpt2-nano"\nn_layer = 1\nn_head = 2\nn_embd = 32\nblock_size = 32
[data]\ndir = "{work}/data"\n[train]\nbatch_size = 4\nseq_len = 32\nmax_steps = 25\nthreads = 1
[eval]\nevery = 5\nbatches = 2\nmultiple_choice = "{work}/items.jsonl"\n[checkpoint]\nevery = 10\n[sample]\ncount = 0\n[run]\ndir = "{work}/run"\n""")
    subprocess.run([lmforge, "train", cfg], check=True, capture_output=True)
    run = os.path.join(work, "run")
    # The crash: step 25's checkpoint never landed; the last one is step 20's.
    shutil.rmtree(os.path.join(run, "checkpoints", "step_000025"))
    with open(os.path.join(run, "latest"), "w") as f:
        f.write("step_000020\n")
    subprocess.run([lmforge, "train", cfg, "--set", "optim.lr=0.001"], check=True, capture_output=True)
    return run


def check_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature"
    at, idat, size = 8, b"", None
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + body), f"CRC of {kind}"
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
            assert body[8:10] == b"\x08\x02", "8-bit RGB"
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    w, h = size
    assert len(zlib.decompress(idat)) == h * (3 * w + 1), "image data size"
    return size


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir", nargs="?")
    ap.add_argument("--make-run", metavar="LMFORGE")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        run = make_run(args.make_run, work) if args.make_run else args.run_dir
        metrics = {}
        for line in open(os.path.join(run, "metrics.jsonl")):
            j = json.loads(line)
            for k, v in j.items():
                if k != "step":
                    metrics[(k, j["step"])] = v
        files = glob.glob(os.path.join(run, "tensorboard", "events.out.tfevents.*"))
        assert files, "no event file"
        # The whole directory, as TensorBoard reads a run: a resumed run has one event file per
        # session, and a later session's start drops the earlier one's events from its step on.
        acc = EventAccumulator(os.path.join(run, "tensorboard"))
        acc.Reload()
        checked, tags = 0, set(acc.Tags()["scalars"])
        for tag in tags:
            key = tag.split("/", 1)[1]
            steps = [e.step for e in acc.Scalars(tag)]
            assert len(steps) == len(set(steps)), f"{tag}: a step shown twice: {sorted(steps)}"
            for e in acc.Scalars(tag):
                want = metrics[(key, e.step)]
                assert abs(e.value - want) <= 1e-6 * max(1.0, abs(want)), f"{tag} step {e.step}: {e.value} vs {want}"
                checked += 1
        assert {"train/loss", "val/val_loss", "train/lr", "multiple_choice/mc_accuracy"} <= tags, f"tags: {tags}"
        w, h = check_png(os.path.join(run, "plots", "loss.png"))
        root = ET.parse(os.path.join(run, "plots", "loss.svg")).getroot()
        assert root.tag.endswith("svg") and root.findall(".//{http://www.w3.org/2000/svg}polyline"), "SVG lines"
        print(f"{run}: {checked} TensorBoard scalars in {len(files)} event files equal metrics.jsonl, each step once; loss.png {w}x{h} decodes; loss.svg parses")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        sys.exit(f"check failed: {e}")
