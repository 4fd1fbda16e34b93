#!/usr/bin/env bash
# lmforge under a real Slurm cluster: one node (this machine, 2 CPUs) with its own munged,
# slurmctld and slurmd, configured and started in a temporary directory, and stopped on exit
# whatever the outcome. On it:
#   1. srun -n 2 --mpi=pmix trains a tiny model; its loss at every step equals, within 1e-5,
#      one process's without Slurm at the same global batch;
#   2. sbatch of the job script users copy (scripts/slurm/train.sbatch), scancel once it has
#      logged 20 steps: the processes stop on the SIGTERM with a checkpoint at the step they
#      stopped after; sbatch again resumes it, and it ends with the very weights, optimizer
#      state and losses of the same run trained without a stop (srun -n 2);
#   3. a job with a time limit of a minute: Slurm sends each process SIGTERM twice in a row,
#      and the run stops with a checkpoint all the same (the job ends TIMEOUT).
# Every wait polls the job's state or its metrics.jsonl, with a timeout of minutes.
# Needs root (the daemons run as root, as do the jobs), Debian's Slurm with its PMIx plugin and
# munge (scripts/install-deps.sh installs them), and python3.
#   scripts/test-slurm.sh [lmforge binary]     (default: $LMFORGE, else build/release/lmforge)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
lmforge=$(realpath "${1:-${LMFORGE:-build/release/lmforge}}")
say() { echo "test-slurm: $*"; }
fail() { echo "test-slurm: FAILED: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root: the test cluster's daemons and jobs run as root"
[ -x "$lmforge" ] || fail "no lmforge binary at $lmforge (give its path as the argument)"
for c in munged slurmctld slurmd srun sbatch scancel squeue scontrol sinfo python3 flock; do
  command -v "$c" >/dev/null || fail "$c not found (scripts/install-deps.sh installs Slurm and munge)"
done

# One test cluster at a time on this machine: the node name and ports are fixed.
exec 9>/tmp/lmforge-test-slurm.lock
flock -w 900 9 || fail "another test-slurm.sh has held /tmp/lmforge-test-slurm.lock for 15 minutes"
ctld_port=16817 slurmd_port=16818
for port in $ctld_port $slurmd_port; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "port $port is taken: another Slurm?"; fi
done

start=$SECONDS
work=$(mktemp -d /tmp/lmforge-slurm.XXXXXX)
chmod 755 "$work"  # munged wants every user to reach its socket's directory
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/runs"
# Every process of the cluster carries this: the daemons, slurmstepd, the jobs' processes.
export LMFORGE_SLURM_TEST="$work"
export SLURM_CONF="$work/slurm.conf"
# OpenMPI's processes talk through shared memory, and TCP if at all over the loopback only.
# (Started by srun, they need no OMPI_ALLOW_RUN_AS_ROOT: only mpirun refuses root.)
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo
munged_pid="" ctld_pid="" slurmd_pid=""
passed=0

# The processes of this test cluster still alive (by the mark in their environment).
cluster_pids() {
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = $$ ] && continue
    tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "LMFORGE_SLURM_TEST=$work" && echo "$p"
  done
  return 0
}

stop_pid() {  # pid name: SIGTERM, then SIGKILL after 15 s
  local pid=$1 name=$2 i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    say "$name did not stop on SIGTERM in 15 s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local status=$? i left
  set +e
  trap - EXIT INT TERM
  if [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2>/dev/null; then
    local jobs
    jobs=$(squeue -h -o %i 2>/dev/null)
    if [ -n "$jobs" ]; then
      say "cancelling jobs still queued or running: $(echo $jobs)"
      scancel $jobs 2>/dev/null
      # Slurm kills what is left KillWait (30 s) after the cancel.
      for i in $(seq 900); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
    fi
  fi
  stop_pid "$slurmd_pid" slurmd
  stop_pid "$ctld_pid" slurmctld
  stop_pid "$munged_pid" munged
  left=$(cluster_pids)
  if [ -n "$left" ]; then
    say "killing what the daemons left: $(for p in $left; do tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline"; echo -n "($p); "; done)"
    kill -KILL $left 2>/dev/null
    sleep 0.5
  fi
  left=$(cluster_pids)
  if [ -n "$left" ]; then
    echo "test-slurm: processes of the test cluster still alive: $(echo $left)" >&2
    [ $status -eq 0 ] && status=1
  else
    say "stopped munged, slurmctld and slurmd; no process of the test cluster is left"
  fi
  if [ $status -eq 0 ] && [ $passed -eq 1 ]; then
    rm -rf "$work"
  else
    for f in slurmctld.log slurmd.log; do
      [ -s "$work/$f" ] && { echo "--- last lines of $work/$f" >&2; tail -n 15 "$work/$f" >&2; }
    done
    echo "test-slurm: logs and runs kept in $work" >&2
    [ $status -eq 0 ] && status=1
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits up to $1 seconds for the command after it to succeed; fails saying $2 otherwise.
wait_for() {
  local timeout=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + timeout))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || fail "timed out after ${timeout} s waiting for $what"
    sleep 0.2
  done
}

# --- the cluster ------------------------------------------------------------------------------
node=$(hostname -s)
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
cat >"$work/slurm.conf" <<EOF
ClusterName=lmforgetest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CryptoType=crypto/munge
# No cgroups: linuxproc tracks a job's processes by their parents, and tasks are not bound (a
# container without systemd gives slurmd no cgroup tree of its own).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
# The node has the CPUs it is said to have, whatever this machine has.
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=30
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName=$node NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
srun --mpi=list 2>&1 | grep -qw pmix || fail "this Slurm has no PMIx plugin (srun --mpi=list)"

# In the foreground of background jobs of this shell, so that their ids are known; without the
# lock's descriptor, which they would otherwise hold.
munged -F --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" --seed-file="$work/munge/seed" \
  >"$work/munge/munged.out" 2>&1 9>&- &
munged_pid=$!
wait_for 20 "munged's socket" test -S "$work/munge/munge.socket"
slurmctld -D -i >"$work/slurmctld.out" 2>&1 9>&- &
ctld_pid=$!
slurmd -D -N "$node" >"$work/slurmd.out" 2>&1 9>&- &
slurmd_pid=$!
node_idle() {
  kill -0 "$ctld_pid" 2>/dev/null || fail "slurmctld exited: $(tail -n 3 "$work/slurmctld.log" "$work/slurmctld.out" 2>&1)"
  kill -0 "$slurmd_pid" 2>/dev/null || fail "slurmd exited: $(tail -n 3 "$work/slurmd.log" "$work/slurmd.out" 2>&1)"
  [ "$(sinfo -h -n "$node" -o %T 2>/dev/null)" = idle ]
}
wait_for 60 "node $node to be idle" node_idle
say "cluster up: munged ($munged_pid), slurmctld ($ctld_pid), slurmd ($slurmd_pid); node $node idle with 2 CPUs," \
  "Slurm $(sinfo -V | awk '{print $2}'), MpiDefault=pmix"

# --- data and configuration -------------------------------------------------------------------
python3 - "$work/corpus.txt" <<'PY'
import random, sys
rng = random.Random(5)
words = "the whale sea ship and white storm of old captain harpoon deck rope sail".split()
with open(sys.argv[1], "w") as f:
    for _ in range(4000):
        f.write(" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) + ".\n")
PY
"$lmforge" prepare --tokenizer char --input "$work/corpus.txt" --output "$work/data" --threads 1 \
  >"$work/prepare.log" 2>&1 || fail "lmforge prepare failed: $(tail -n 3 "$work/prepare.log")"
# A global batch of 4 sequences of 32 tokens: one process accumulates 4 micro-batches of one,
# two processes 2 each. One thread per process: bit-identity holds at a fixed thread count. A
# constant learning rate after warm-up: train.max_steps changes nothing before the last step.
cat >"$work/tiny.toml" <<EOF
[model]
preset = "gpt2-nano"
n_layer = 2
n_head = 2
n_embd = 32
block_size = 32
[data]
dir = "$work/data"
[train]
batch_size = 1
seq_len = 32
total_batch_tokens = 128
max_steps = 60
threads = 1
precision = "fp32"
[optim]
lr = 3e-3
warmup_steps = 5
schedule = "constant"
[eval]
every = 20
batches = 2
[checkpoint]
every = 25
keep_last = 2
[log]
every = 100
plots = false
[sample]
count = 0
EOF
cfg="$work/tiny.toml" runs="$work/runs"
train_steps() {  # the training steps a run has logged
  local n
  n=$(grep -c '"loss"' "$1/metrics.jsonl" 2>/dev/null) || true
  echo "${n:-0}"
}

# --- 1. srun -n 2 against one process ---------------------------------------------------------
"$lmforge" train "$cfg" --set run.dir="$runs/one" >"$work/one.log" 2>&1 ||
  fail "one process without Slurm: lmforge train failed: $(tail -n 3 "$work/one.log")"
srun -n 2 --mpi=pmix "$lmforge" train "$cfg" --set run.dir="$runs/srun2" >"$work/srun2.log" 2>&1 ||
  fail "srun -n 2 --mpi=pmix: lmforge train failed: $(tail -n 3 "$work/srun2.log")"
grep -q "2 processes (mpi)" "$runs/srun2/train.log" ||
  fail "srun -n 2: the processes did not run as one MPI job of 2: $(grep -m1 processes "$runs/srun2/train.log")"
say "srun -n 2 --mpi=pmix trained 60 steps as 2 MPI processes; one process without Slurm trained the same"
python3 "$repo/tools/compare_runs.py" "$runs/one" "$runs/srun2" --rel 1e-5 | sed 's/^/test-slurm: /' ||
  fail "srun -n 2 does not train as one process with the same global batch"

# --- 2. sbatch, scancel, sbatch again ---------------------------------------------------------
job_script="$repo/scripts/slurm/train.sbatch"
submit() {  # max_steps: the job id
  LMFORGE="$lmforge" sbatch --parsable --output="$work/job-%j.out" "$job_script" "$cfg" \
    --set run.dir="$runs/sbatch" --set train.max_steps="$1"
}
job_state() { scontrol show job "$1" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2; }
job_gone() { [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; }

# The first job has no end in reach (a million steps), so the cancel cannot come too late.
job=$(submit 1000000)
say "sbatch $job_script: job $job"
started() {
  job_gone "$job" && fail "job $job ended before it was cancelled ($(job_state "$job")): $(tail -n 3 "$work/job-$job.out")"
  [ "$(train_steps "$runs/sbatch")" -ge 20 ]
}
wait_for 120 "job $job to train 20 steps" started
scancel "$job"
say "scancel $job after it had logged $(train_steps "$runs/sbatch") steps"
wait_for 90 "job $job to end after scancel" job_gone "$job"
state=$(job_state "$job")
[ "$state" = CANCELLED ] || fail "job $job ended $state, not CANCELLED"
line=$(grep -E '^stopped .* at step [0-9]+ by SIGTERM: checkpoint ' "$work/job-$job.out") ||
  fail "job $job did not stop with a checkpoint on scancel's SIGTERM: $(tail -n 3 "$work/job-$job.out")"
stop=$(echo "$line" | sed -E 's/.* at step ([0-9]+) by .*/\1/')
ckpt=$(printf '%s/checkpoints/step_%06d' "$runs/sbatch" "$stop")
[ -f "$ckpt/model.safetensors" ] && [ -f "$ckpt/optimizer.safetensors" ] ||
  fail "the stop's checkpoint $ckpt is not there"
[ "$(cat "$runs/sbatch/latest")" = "$(basename "$ckpt")" ] ||
  fail "latest names $(cat "$runs/sbatch/latest"), not the stop's $(basename "$ckpt")"
[ "$(train_steps "$runs/sbatch")" -eq "$stop" ] ||
  fail "the job logged $(train_steps "$runs/sbatch") steps but its checkpoint is at step $stop"
say "job $job: $state; the processes stopped on SIGTERM after step $((stop - 1)) and saved $(basename "$ckpt")"

end=$((stop + 40))
job2=$(submit $end)
say "sbatch again (to step $end): job $job2"
wait_for 180 "job $job2 to end" job_gone "$job2"
state=$(job_state "$job2")
[ "$state" = COMPLETED ] || fail "job $job2 ended $state: $(tail -n 3 "$work/job-$job2.out")"
grep -qF "resuming from $ckpt (step $stop)" "$work/job-$job2.out" ||
  fail "job $job2 did not resume from $ckpt"
say "job $job2: $state, resumed from step $stop and trained to step $end"
srun -n 2 --mpi=pmix "$lmforge" train "$cfg" --set run.dir="$runs/straight" --set train.max_steps=$end \
  >"$work/straight.log" 2>&1 || fail "srun -n 2 (the run without a stop) failed: $(tail -n 3 "$work/straight.log")"
say "srun -n 2 trained the same $end steps without a stop"
python3 "$repo/tools/compare_runs.py" "$runs/sbatch" "$runs/straight" --exact --same-weights |
  sed 's/^/test-slurm: /' || fail "the stopped and resubmitted job does not end as the run without a stop"

# --- 3. the time limit --------------------------------------------------------------------------
# Not the job script, whose --signal=USR1@120 would stop a job of one minute before its limit: a
# job that srun's processes fill until Slurm ends it. Slurm checks time limits every 30 s, so
# the job ends between one and one and a half minutes in.
job3=$(sbatch --parsable --time=1 --ntasks=2 --cpus-per-task=1 --output="$work/job-%j.out" \
  --wrap "exec srun --mpi=pmix $(printf '%q ' "$lmforge" train "$cfg" --set run.dir="$runs/timelimit" --set train.max_steps=1000000)")
say "sbatch --time=1 of srun -n 2 --mpi=pmix lmforge train: job $job3"
wait_for 300 "job $job3 to reach its time limit" job_gone "$job3"
state=$(job_state "$job3")
[ "$state" = TIMEOUT ] || fail "job $job3 ended $state, not TIMEOUT: $(tail -n 3 "$work/job-$job3.out")"
line=$(grep -E '^stopped .* at step [0-9]+ by SIGTERM: checkpoint ' "$work/job-$job3.out") ||
  fail "job $job3 did not stop with a checkpoint at its time limit: $(tail -n 3 "$work/job-$job3.out")"
stop=$(echo "$line" | sed -E 's/.* at step ([0-9]+) by .*/\1/')
ckpt=$(printf '%s/checkpoints/step_%06d' "$runs/timelimit" "$stop")
[ -f "$ckpt/model.safetensors" ] && [ "$(cat "$runs/timelimit/latest")" = "$(basename "$ckpt")" ] ||
  fail "the time limit's checkpoint $ckpt is not the run's latest"
say "job $job3: $state after $(scontrol show job "$job3" | grep -oE 'RunTime=[0-9:]+' | cut -d= -f2);" \
  "the processes stopped on SIGTERM after step $((stop - 1)) and saved $(basename "$ckpt")"

passed=1
say "passed in $((SECONDS - start)) s: srun -n 2 trains as one process; sbatch, scancel (a checkpoint on SIGTERM)" \
  "and sbatch again end bit for bit as a run without a stop; a time limit stops with a checkpoint"
