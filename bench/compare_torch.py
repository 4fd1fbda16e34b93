#!/usr/bin/env python3
"""lmforge against the PyTorch reference, measured in one run on the same threads.

Runs `lmforge bench --json` in each of its modes and ../shared/bench/torch_gpt2.py in each of
PyTorch's (eager fp32, eager bf16 autocast, torch.compile, torch.compile + bf16) alternately,
several rounds per config, so that all of them see the same machine state. Prints the median
of each, then lmforge's best mode against PyTorch's best mode (fastest each) as ratios:
speed (tokens/s, higher is better) and peak RSS of those two runs (lower is better). Also
the model FLOP utilisation of lmforge's best mode against the peak of its precision (each
lmforge run measures it as it starts; the highest of the runs counts).
Configs as the reference defines them:
  A = GPT-2 124M, B=4, T=64;  B = 6 layers/6 heads/384 wide, vocab 50257, B=8, T=256;
  C = as B with vocab 65, B=16, T=256.

    python3 bench/compare_torch.py --configs A B C --rounds 3 --threads 2
    python3 bench/compare_torch.py --configs C --lmforge-modes bf16 bf16+block --torch-modes bf16
A lmforge mode is a precision with an optional recompute, optional bf16 Adam moments and
optional bf16 gradients (fp32, bf16, bf16+gelu, bf16+block, fp32+block+bf16-moments,
bf16+bf16-moments+bf16-grads). Besides the fastest modes, the
leanest lmforge mode (lowest peak RSS) is set against PyTorch's fastest.
Needs PyTorch (pip install torch==2.13.0) and a release build (scripts/build.sh).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {
    "A": dict(layers=12, heads=12, embd=768, vocab=50257, batch=4, seq=64),
    "B": dict(layers=6, heads=6, embd=384, vocab=50257, batch=8, seq=256),
    "C": dict(layers=6, heads=6, embd=384, vocab=65, batch=16, seq=256),
}
TORCH_MODES = {"fp32": [], "bf16": ["--dtype", "bf16"], "compile": ["--compile"],
               "compile-bf16": ["--compile", "--dtype", "bf16"]}


def run_json(cmd, pause):
    time.sleep(pause)  # let the previous run's processes (torch.compile's workers) wind down
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def lmforge_cmd(binary, cfg, mode, args):
    precision, *options = mode.split("+")
    moments = "bf16" if "bf16-moments" in options else "fp32"
    grads = "bf16" if "bf16-grads" in options else "fp32"
    recompute = [o for o in options if o not in ("bf16-moments", "bf16-grads")]
    if len(recompute) > 1:
        sys.exit(f"mode {mode}: one recompute at most")
    return [binary, "bench", "--json", "--threads", str(args.threads), "--steps", str(args.steps),
            "--layers", str(cfg["layers"]), "--heads", str(cfg["heads"]), "--embd", str(cfg["embd"]),
            "--vocab", str(cfg["vocab"]), "--batch", str(cfg["batch"]), "--seq", str(cfg["seq"]),
            "--precision", precision, "--recompute", recompute[0] if recompute else "none", "--moments", moments,
            "--grads", grads]


def torch_cmd(name, mode, args):
    return [sys.executable, args.torch_bench, "--config", name, "--threads", str(args.threads),
            "--steps", str(args.steps)] + TORCH_MODES[mode]


def median_of(runs, tokens_per_step):
    runs = [r for r in runs if r is not None]
    if not runs:
        return None
    ms = statistics.median(r["step_ms_median"] for r in runs)
    # tokens/s from the median step, so that every ratio is the ms columns' (with an even
    # number of rounds a median of tokens/s would not be the reciprocal of the median ms).
    return dict(tok=tokens_per_step * 1000.0 / ms, ms=ms,
                rss=statistics.median(r["max_rss_mb"] for r in runs),
                gflops=statistics.median(r.get("model_gflops", 0.0) for r in runs),
                # Each run measures the peak as it starts; a busy moment only lowers it.
                peak=max((r.get("peak_gflops") or 0.0) for r in runs), n=len(runs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", nargs="+", default=["A", "B", "C"], choices=sorted(CONFIGS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lmforge", default=os.path.join(ROOT, "build", "release", "lmforge"))
    ap.add_argument("--torch-bench", default=os.path.join(ROOT, "..", "shared", "bench", "torch_gpt2.py"))
    ap.add_argument("--lmforge-modes", nargs="+", default=["fp32", "bf16"])
    ap.add_argument("--torch-modes", nargs="+", default=list(TORCH_MODES), choices=list(TORCH_MODES))
    ap.add_argument("--pause", type=float, default=5.0, help="seconds of rest before each run")
    args = ap.parse_args()

    report = []
    for name in args.configs:
        cfg = CONFIGS[name]
        runs = {f"lmforge {m}": [] for m in args.lmforge_modes}
        runs.update({f"torch {m}": [] for m in args.torch_modes})
        for r in range(args.rounds):  # alternate, so drifts in machine speed hit every mode
            for m in args.lmforge_modes:
                runs[f"lmforge {m}"].append(run_json(lmforge_cmd(args.lmforge, cfg, m, args), args.pause))
            for m in args.torch_modes:
                runs[f"torch {m}"].append(run_json(torch_cmd(name, m, args), args.pause))
            print(f"config {name} round {r + 1}/{args.rounds} done", file=sys.stderr)
        med = {k: median_of(v, cfg["batch"] * cfg["seq"]) for k, v in runs.items()}
        report.append((name, {k: v for k, v in med.items() if v is not None}))

    print(f"\n{args.threads} threads, {args.steps} timed steps, median of {args.rounds} alternated rounds\n")
    print(f"{'config':6} {'impl':32} {'ms/step':>9} {'tokens/s':>9} {'RSS MiB':>8} {'GFLOP/s':>8}")
    for name, med in report:
        for impl, m in med.items():
            print(f"{name:6} {impl:32} {m['ms']:9.1f} {m['tok']:9.1f} {m['rss']:8.0f} {m['gflops']:8.1f}")
    print("\nbest against best (fastest mode of each):")
    print_against_torch(report, lambda ours: max(ours, key=lambda k: ours[k]["tok"]))
    print("\nleanest lmforge mode (lowest peak RSS) against PyTorch's fastest:")
    print_against_torch(report, lambda ours: min(ours, key=lambda k: ours[k]["rss"]))


def print_against_torch(report, pick):
    """One lmforge mode per config, chosen by pick(modes), against PyTorch's fastest."""
    print(f"{'config':6} {'lmforge':32} {'torch':22} {'speed':>7} {'RSS':>6} {'lmforge MFU':>12}")
    for name, med in report:
        ours = {k: v for k, v in med.items() if k.startswith("lmforge")}
        theirs = {k: v for k, v in med.items() if k.startswith("torch")}
        if not ours or not theirs:
            continue
        mode = pick(ours)
        best_theirs = max(theirs, key=lambda k: theirs[k]["tok"])
        o, t = ours[mode], theirs[best_theirs]
        mfu = f"{100 * o['gflops'] / o['peak']:.0f}% of {o['peak']:.0f}" if o.get("peak") else "-"
        print(f"{name:6} {mode:32} {best_theirs:22} {o['tok'] / t['tok']:6.2f}x {o['rss'] / t['rss']:5.2f}x "
              f"{mfu:>12}")


if __name__ == "__main__":
    main()
