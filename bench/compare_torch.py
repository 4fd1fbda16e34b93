#!/usr/bin/env python3
"""lmforge against the PyTorch reference, measured in one run on the same threads.

Runs `lmforge bench --json` and ../shared/bench/torch_gpt2.py alternately, several rounds per
config, so that both see the same machine state; prints the median of each and their
ratios (tokens/s: lmforge / PyTorch, higher is better; peak RSS: lmforge / PyTorch, lower is
better). Configs as the reference defines them:
  A = GPT-2 124M, B=4, T=64;  B = 6 layers/6 heads/384 wide, vocab 50257, B=8, T=256;
  C = as B with vocab 65, B=16, T=256.

    python3 bench/compare_torch.py --configs A B --rounds 3 --threads 2
Needs PyTorch (pip install torch==2.13.0) and a release build (scripts/build.sh).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {
    "A": dict(layers=12, heads=12, embd=768, vocab=50257, batch=4, seq=64),
    "B": dict(layers=6, heads=6, embd=384, vocab=50257, batch=8, seq=256),
    "C": dict(layers=6, heads=6, embd=384, vocab=65, batch=16, seq=256),
}


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def lmforge_cmd(binary, cfg, args):
    return [binary, "bench", "--json", "--threads", str(args.threads), "--steps", str(args.steps),
            "--layers", str(cfg["layers"]), "--heads", str(cfg["heads"]), "--embd", str(cfg["embd"]),
            "--vocab", str(cfg["vocab"]), "--batch", str(cfg["batch"]), "--seq", str(cfg["seq"])]


def torch_cmd(name, args, extra):
    return [sys.executable, args.torch_bench, "--config", name, "--threads", str(args.threads),
            "--steps", str(args.steps)] + extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", nargs="+", default=["A", "B"], choices=sorted(CONFIGS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lmforge", default=os.path.join(ROOT, "build", "release", "lmforge"))
    ap.add_argument("--torch-bench", default=os.path.join(ROOT, "..", "shared", "bench", "torch_gpt2.py"))
    ap.add_argument("--torch-modes", nargs="+", default=["fp32"],
                    help="PyTorch modes to run: fp32, bf16 (autocast), compile")
    args = ap.parse_args()
    mode_flags = {"fp32": [], "bf16": ["--dtype", "bf16"], "compile": ["--compile"]}

    rows = []
    for name in args.configs:
        cfg = CONFIGS[name]
        results = {"lmforge": []}
        results.update({f"torch {m}": [] for m in args.torch_modes})
        for r in range(args.rounds):  # alternate, so drifts in machine speed hit both
            results["lmforge"].append(run_json(lmforge_cmd(args.lmforge, cfg, args)))
            for m in args.torch_modes:
                results[f"torch {m}"].append(run_json(torch_cmd(name, args, mode_flags[m])))
            print(f"config {name} round {r + 1}/{args.rounds} done", file=sys.stderr)
        med = {k: dict(tok=statistics.median(x["tokens_per_s"] for x in v),
                       ms=statistics.median(x["step_ms_median"] for x in v),
                       rss=statistics.median(x["max_rss_mb"] for x in v),
                       loss=v[0]["loss_first"])
               for k, v in results.items()}
        rows.append((name, med))

    print(f"\n{args.threads} threads, {args.steps} timed steps, median of {args.rounds} alternated rounds\n")
    print(f"{'config':6} {'impl':14} {'ms/step':>9} {'tokens/s':>9} {'RSS MiB':>8} "
          f"{'speed vs torch fp32':>20} {'RSS vs torch fp32':>18}")
    for name, med in rows:
        ref = med.get("torch fp32")
        for impl, m in med.items():
            speed = f"{m['tok'] / ref['tok']:.2f}x" if ref else "-"
            rss = f"{m['rss'] / ref['rss']:.2f}x" if ref else "-"
            print(f"{name:6} {impl:14} {m['ms']:9.1f} {m['tok']:9.1f} {m['rss']:8.0f} {speed:>20} {rss:>18}")


if __name__ == "__main__":
    main()
