#!/usr/bin/env python3
"""Data-parallel scaling on this machine, the mini config (6 layers, 6 heads, 384 wide, vocab
50257, 2048 tokens a step) on Moby Dick's GPT-2 shards:
  - 1 process x 2 threads against 2 processes x 1 thread (same global batch);
  - time waiting on communication with overlapped bucket all-reduce, and without;
  - optimizer state per process with and without ZeRO-1.
The setups alternate over several rounds (this machine's speed drifts over minutes); each
figure is the median over rounds of the median over steps (after the first two).

    python3 bench/scaling.py [--steps 14] [--rounds 3]   (needs data/moby-dick: scripts/run.sh makes it)
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LMFORGE = os.path.join(ROOT, "build", "release", "lmforge")
MPIRUN = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader,tcp", "-np"]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run(name, procs, batch, threads, extra, steps, work):
    cfg = os.path.join(work, name + ".toml")
    with open(cfg, "w") as f:
        f.write(f"""[model]\npreset = "gpt2-mini"\nblock_size = 256\n[data]\ndir = "{ROOT}/data/moby-dick"
[train]\nbatch_size = {batch}\nseq_len = 256\ntotal_batch_tokens = 2048\nmax_steps = {steps}\nthreads = {threads}
[optim]\nwarmup_steps = 2\n{extra}\n[eval]\nevery = 0\nbatches = 1\n[checkpoint]\nevery = 0\n[log]\nevery = 1
tensorboard = false\nplots = false\n[sample]\ncount = 0\n[run]\ndir = "{work}/{name}"\n""")
    cmd = ([*MPIRUN, str(procs)] if procs > 1 else []) + [LMFORGE, "train", cfg]
    out = subprocess.run(cmd, env=ENV, capture_output=True, text=True, check=True).stderr
    steps_lines = [l for l in out.splitlines() if re.search(r"step +\d+/", l)][2:]
    tok = statistics.median(float(re.search(r"(\d+) tok/s", l).group(1)) for l in steps_lines)
    comm = statistics.median(float(re.search(r"comm ([\d.]+) ms", l).group(1)) for l in steps_lines)
    m = re.search(r"optimizer state ([\d.]+) MB", out)
    state = float(m.group(1)) if m else None
    return tok, comm, state


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=14)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    setups = [
        ("1 process x 2 threads", "one", 1, 8, 2, ""),
        ("2 processes x 1 thread, overlap", "overlap", 2, 4, 1, "[dist]\noverlap = true"),
        ("2 processes x 1 thread, no overlap", "serial", 2, 4, 1, "[dist]\noverlap = false"),
        ("2 processes x 1 thread, ZeRO-1", "zero", 2, 4, 1, "zero_stage = 1"),
    ]
    results = {s[0]: [] for s in setups}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            for label, name, procs, batch, threads, extra in (setups if r % 2 == 0 else setups[::-1]):
                results[label].append(run(f"{name}{r}", procs, batch, threads, extra, args.steps, work))
    rows = [(label, statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), v[0][2])
            for label, v in results.items()]
    print(f"\nmini config, 2048 tokens a step; median over {args.rounds} alternated rounds of the median of steps 3..{args.steps}\n")
    print(f"{'setup':40} {'tokens/s':>9} {'comm wait ms':>13} {'optimizer MB/process':>21}")
    for name, tok, comm, state in rows:
        print(f"{name:40} {tok:9.0f} {comm:13.1f} {state if state is not None else '-':>21}")


if __name__ == "__main__":
    main()
