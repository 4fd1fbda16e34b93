#!/usr/bin/env python3
"""Compares two lmforge run directories step by step: the training loss of every step in their
metrics.jsonl, within a relative tolerance or bit for bit, and with --same-weights their final
weights and optimizer state (final/model.safetensors, final/optimizer.safetensors) byte for byte.

    python3 tools/compare_runs.py RUN_A RUN_B [--rel 1e-5 | --exact] [--same-weights]

Prints one line per check and exits 1 on a mismatch, saying where. Standard library only.
"""
import argparse
import filecmp
import json
import os
import sys


def train_losses(run):
    """{step: loss}; a step logged twice (a run that redid steps after a crash) keeps its last."""
    losses = {}
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            try:
                j = json.loads(line)
            except json.JSONDecodeError:
                continue  # a half line a killed writer left
            if "loss" in j:
                losses[j["step"]] = j["loss"]
    return losses


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--rel", type=float, default=1e-5, help="largest relative difference of a step's loss")
    p.add_argument("--exact", action="store_true", help="losses must be equal bit for bit")
    p.add_argument("--same-weights", action="store_true", help="final weights and optimizer state byte for byte")
    a = p.parse_args()
    name_a, name_b = os.path.basename(a.run_a.rstrip("/")), os.path.basename(a.run_b.rstrip("/"))
    failed = []

    la, lb = train_losses(a.run_a), train_losses(a.run_b)
    if not la or sorted(la) != sorted(lb):
        failed.append(f"steps differ: {name_a} logged {len(la)} (to {max(la, default=-1)}), "
                      f"{name_b} {len(lb)} (to {max(lb, default=-1)})")
    else:
        worst_step, worst = max(((s, abs(la[s] - lb[s]) / max(abs(lb[s]), 1e-30)) for s in la), key=lambda x: x[1])
        tolerance = 0.0 if a.exact else a.rel
        line = (f"losses of {len(la)} steps: {name_a} vs {name_b}: "
                + ("identical" if worst == 0 else f"differ by at most {worst:.2e} relative (step {worst_step})"))
        if worst > tolerance:
            failed.append(f"{line}, above {'0 (bit for bit)' if a.exact else f'{tolerance:g}'}: "
                          f"step {worst_step}: {la[worst_step]!r} vs {lb[worst_step]!r}")
        else:
            print(line)

    if a.same_weights:
        for name in ("model.safetensors", "optimizer.safetensors"):
            fa, fb = (os.path.join(r, "final", name) for r in (a.run_a, a.run_b))
            if not (os.path.isfile(fa) and os.path.isfile(fb)):
                failed.append(f"final/{name} missing in {name_a if not os.path.isfile(fa) else name_b}")
            elif filecmp.cmp(fa, fb, shallow=False):
                print(f"final/{name}: {name_a} and {name_b} byte for byte identical ({os.path.getsize(fa)} bytes)")
            else:
                failed.append(f"final/{name}: {name_a} and {name_b} differ")

    for f in failed:
        print(f"compare_runs: MISMATCH: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
