#!/usr/bin/env python3
"""A chaos run: training killed at random and resumed, many times, must end where an
uninterrupted run ends.

Each cycle starts `lmforge train` (under mpirun for more than one process), waits a random
number of steps and interrupts it one of five ways: kill -9 of every process, SIGTERM (or, under
mpirun, SIGUSR1) for a clean stop, kill -9 of one MPI rank, or a full disk (the run directory
lives on a small tmpfs that a filler file fills before the next checkpoint). Then it resumes.

Two runs go through the chaos:
  - fixed:   every cycle on the same number of processes; its final weights must be bit-identical
             to an uninterrupted run's on that many processes;
  - varying: each cycle on 1 to 3 processes (the run's global batch kept by accumulation); its
             losses must match an uninterrupted single-process run's within 1e-5 at every step.

    python3 tools/chaos.py --lmforge build/release/lmforge [--cycles 30] [--steps 400] [--work DIR]

Needs OpenMPI's mpirun, and root for the tmpfs (without it the full-disk kind is skipped, and
said so). Prints the cycles, the kills of each kind and the comparison; exits 1 on a mismatch.
"""
import argparse
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,tcp,vader"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMP_WAIT_POLICY": "passive"}
KINDS = ["kill -9", "stop signal", "killed rank", "full disk"]


def corpus(n_lines=4000, seed=5):
    rng = random.Random(seed)
    words = "the whale sea ship and white storm of old captain harpoon deck rope sail".split()
    return "".join(" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) + ".\n" for _ in range(n_lines))


def config(data, run_dir, steps):
    # A global batch of 6 sequences of one per micro-batch: 1, 2 or 3 processes reach it by
    # accumulation. One thread per process: bit-identity holds at a fixed thread count.
    return f"""[model]
preset = "gpt2-nano"
n_layer = 2
n_head = 2
n_embd = 32
block_size = 32
[data]
dir = "{data}"
[train]
batch_size = 1
seq_len = 32
total_batch_tokens = {6 * 32}
max_steps = {steps}
threads = 1
precision = "fp32"
[optim]
lr = 3e-3
warmup_steps = 10
[eval]
every = 50
batches = 2
[checkpoint]
every = 7
keep_last = 2
[log]
every = 1
[sample]
count = 0
[run]
dir = "{run_dir}"
"""


class Chaos:
    def __init__(self, lmforge, work, steps, cycles):
        self.lmforge, self.work, self.steps = lmforge, work, steps
        self.max_gap = max(2, 2 * steps // cycles)  # steps between interruptions: cycles of them fill a run
        self.kills = collections.Counter()
        self.data = os.path.join(work, "data")
        with open(os.path.join(work, "corpus.txt"), "w") as f:
            f.write(corpus())
        self.check([lmforge, "prepare", "--tokenizer", "char", "--input", f.name, "--output", self.data])

    def check(self, cmd, **kw):
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **MPI_ENV}, **kw)
        if r.returncode != 0:
            sys.exit(f"chaos: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
        return r

    def command(self, cfg, processes):
        train = [self.lmforge, "train", cfg]
        return train if processes == 1 else MPIRUN + ["-np", str(processes)] + train

    def write_config(self, name, run_dir, processes):
        path = os.path.join(self.work, f"{name}-{processes}.toml")
        with open(path, "w") as f:
            f.write(config(self.data, run_dir, self.steps))
        return path

    def straight(self, name, processes):
        run = os.path.join(self.work, name)
        self.check(self.command(self.write_config(name, run, processes), processes))
        return run

    def last_step(self, run):
        step = -1
        try:
            with open(os.path.join(run, "metrics.jsonl")) as f:
                for line in f:
                    try:
                        j = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # the writer's half line
                    if "loss" in j:
                        step = max(step, j["step"])
        except FileNotFoundError:
            pass
        return step

    def ranks(self, mpirun_pid):
        out = subprocess.run(["pgrep", "-P", str(mpirun_pid), "-f", "lmforge"], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def interrupt(self, proc, kind, processes):
        if kind == "kill -9":
            os.killpg(proc.pid, signal.SIGKILL)
        elif kind == "stop signal":
            proc.send_signal(signal.SIGUSR1 if processes > 1 else signal.SIGTERM)
        elif kind == "killed rank":
            ranks = self.ranks(proc.pid)
            os.kill(random.choice(ranks) if ranks else proc.pid, signal.SIGKILL)
        proc.wait(timeout=300)

    def cycle(self, run, cfg, processes, kind, disk):
        """One start, interrupted at a random step by `kind` (or ended by its own end)."""
        start = self.last_step(run)
        target = start + random.randint(1, self.max_gap)
        filler = os.path.join(disk, "filler") if kind == "full disk" else None
        proc = subprocess.Popen(self.command(cfg, processes), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**os.environ, **MPI_ENV}, start_new_session=True)
        while proc.poll() is None and self.last_step(run) < target:
            time.sleep(0.002)
        if proc.poll() is not None:
            return False  # the run ended first
        if filler:
            # Every byte the tmpfs has left: the next write of the run (a metrics line, a
            # checkpoint) fails, and the run ends with its error.
            subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M"], capture_output=True)
            proc.wait(timeout=300)
            os.remove(filler)
        else:
            self.interrupt(proc, kind, processes)
        self.kills[kind] += 1
        return True

    def chaos(self, name, processes_of, cycles, disk):
        run = os.path.join(disk if disk else self.work, name)
        configs = {}
        for c in range(cycles):
            processes = processes_of(c)
            cfg = configs.setdefault(processes, self.write_config(name, run, processes))
            kinds = KINDS if disk else KINDS[:3]
            kind = random.choice(kinds if processes > 1 else [k for k in kinds if k != "killed rank"])
            interrupted = self.cycle(run, cfg, processes, kind, disk)
            print(f"  {name} cycle {c + 1}: {processes} process(es), "
                  + (f"{kind} at step {self.last_step(run)}" if interrupted else "ran to its end"), flush=True)
            if not interrupted:
                break
        last = processes_of(cycles)  # then on to the end
        self.check(self.command(configs.setdefault(last, self.write_config(name, run, last)), last))
        return run


def losses(run):
    out = {}
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if "loss" in j:
                out[j["step"]] = j["loss"]
    return out


def tmpfs(work, megabytes):
    """A small tmpfs for the full-disk kind (root only); None where it cannot be mounted."""
    point = os.path.join(work, "disk")
    os.makedirs(point)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", point], capture_output=True)
    return point if r.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lmforge", required=True)
    ap.add_argument("--cycles", type=int, default=30)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--work", default="")
    args = ap.parse_args()
    random.seed(args.seed)
    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="lmforge-chaos-")
    os.makedirs(work, exist_ok=True)
    chaos = Chaos(os.path.abspath(args.lmforge), work, args.steps, args.cycles)
    disk = tmpfs(work, 64)
    print(f"chaos: seed {args.seed}, {args.cycles} cycles a run, {args.steps} steps, work {work}"
          + ("" if disk else "; no tmpfs (not root?): the full-disk kind is skipped"))
    ok, began = True, time.time()
    try:
        # The fixed world: 2 processes every cycle; its end equals an uninterrupted 2-process run's.
        reference = chaos.straight("straight-2", 2)
        fixed = chaos.chaos("fixed", lambda c: 2, args.cycles, disk)
        last = "final/model.safetensors"
        same = open(os.path.join(fixed, last), "rb").read() == open(os.path.join(reference, last), "rb").read()
        print(f"fixed world (2 processes): final weights {'bit-identical' if same else 'DIFFER'}")
        ok &= same
        # The varying world: 1 to 3 processes a cycle; losses within 1e-5 of one process's.
        single = losses(chaos.straight("straight-1", 1))
        varying = losses(chaos.chaos("varying", lambda c: random.randint(1, 3), args.cycles, disk))
        worst = max(abs(varying[s] - v) / abs(v) for s, v in single.items()) if len(varying) == len(single) else 1
        print(f"varying world (1-3 processes): {len(varying)} steps, worst relative loss difference {worst:.2e}")
        ok &= worst <= 1e-5
        print("kills: " + ", ".join(f"{kind} {chaos.kills[kind]}" for kind in KINDS)
              + f"; {time.time() - began:.0f} s")
    finally:
        if disk:
            subprocess.run(["umount", disk])
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
