#!/usr/bin/env bash
# One training job across several hosts, simulated on this machine: network namespaces
# lmf-h1..hN ("hosts" 10.77.0.1..N) joined by veth pairs to a bridge, OpenMPI over TCP, its
# daemons started by scripts/netns-agent.sh (no ssh). Then the same job as N processes on one
# host, and the two loss sequences compared. Needs root (ip netns, tc).
#   scripts/multihost-demo.sh [--hosts N] [--rate 1gbit] [--steps 20] [--config FILE]
# On real hosts the same run is:  mpirun --hostfile hosts -np N lmforge train CONFIG
# (hosts: one "name slots=1" per line), or under Slurm:  srun -N N lmforge train CONFIG.
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=3 rate="" steps=20 config=""
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
lmforge="$PWD/build/release/lmforge"
work="$(mktemp -d /tmp/lmforge-multihost.XXXXXX)"

cleanup() {
  for i in $(seq 1 "$hosts"); do ip netns del "lmf-h$i" 2>/dev/null || true; done
  ip link del lmf-br0 2>/dev/null || true
}
trap cleanup EXIT
cleanup

# The network: a bridge in this namespace (10.77.0.254), one veth pair per host.
ip link add lmf-br0 type bridge
ip addr add 10.77.0.254/24 dev lmf-br0
ip link set lmf-br0 up
for i in $(seq 1 "$hosts"); do
  ip netns add "lmf-h$i"
  ip link add "lmf-v$i" type veth peer name "lmf-p$i"
  ip link set "lmf-v$i" netns "lmf-h$i"
  ip link set "lmf-p$i" master lmf-br0 up
  ip netns exec "lmf-h$i" ip addr add "10.77.0.$i/24" dev "lmf-v$i"
  ip netns exec "lmf-h$i" ip link set "lmf-v$i" up
  ip netns exec "lmf-h$i" ip link set lo up
  if [ -n "$rate" ]; then  # both directions of each host's link
    tc qdisc add dev "lmf-p$i" root tbf rate "$rate" burst 256kb latency 100ms
    ip netns exec "lmf-h$i" tc qdisc add dev "lmf-v$i" root tbf rate "$rate" burst 256kb latency 100ms
  fi
  echo "10.77.0.$i slots=1" >> "$work/hosts"
done

# A small job, unless a config is given.
if [ -z "$config" ]; then
  "$lmforge" data get moby-dick >/dev/null
  book="$("$lmforge" data get moby-dick)/moby_dick.txt"
  "$lmforge" prepare --tokenizer char --input "$book" --output "$work/data" >/dev/null 2>&1
  config="$work/job.toml"
  cat > "$config" <<TOML
[model]
preset = "gpt2-nano"
n_layer = 4
n_head = 4
n_embd = 128
block_size = 128
[data]
dir = "$work/data"
[train]
batch_size = 8
seq_len = 128
total_batch_tokens = $((8 * 128 * hosts))
max_steps = $steps
threads = 1
[optim]
lr = 2e-3
warmup_steps = 5
[eval]
every = 0
[checkpoint]
every = 0
[log]
every = 5
[sample]
count = 0
TOML
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
net=(--mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24)
echo "== $hosts hosts (network namespaces${rate:+, links limited to $rate})"
if ! mpirun --hostfile "$work/hosts" -np "$hosts" --mca plm_rsh_agent "$PWD/scripts/netns-agent.sh" "${net[@]}" \
    "$lmforge" train "$config" --set run.dir="$work/multihost" > "$work/multihost.log" 2>&1; then
  tail -20 "$work/multihost.log"
  exit 1
fi
grep -E "processes|step .*\|" "$work/multihost.log" | tail -3
echo "== the same job, $hosts processes on one host"
mpirun -np "$hosts" --oversubscribe --mca btl self,tcp,vader \
  "$lmforge" train "$config" --set run.dir="$work/onehost" > "$work/onehost.log" 2>&1
grep -E "step .*\|" "$work/onehost.log" | tail -1

python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def losses(run):
    return {j["step"]: j["loss"] for j in map(json.loads, open(f"{work}/{run}/metrics.jsonl")) if "loss" in j}
def rate(run):
    t = [j["tokens_per_s"] for j in map(json.loads, open(f"{work}/{run}/metrics.jsonl")) if "tokens_per_s" in j]
    t = sorted(t[1:])  # the first step includes start-up
    return t[len(t) // 2]
a, b = losses("multihost"), losses("onehost")
same = a == b
worst = max(abs(a[s] - b[s]) / b[s] for s in b)
print(f"loss sequences over {len(b)} steps: {'identical' if same else f'differ by at most {worst:.2e} relative'}")
print(f"tokens/s (median): {rate('multihost'):.0f} across hosts, {rate('onehost'):.0f} on one host")
sys.exit(0 if worst < 1e-5 else 1)
PY
