#!/usr/bin/env bash
# Fuzzing (docs/fuzzing.md): installs clang and libFuzzer if missing, builds the fuzz preset
# and runs each harness of fuzz/ for a bounded time under ASan + UBSan, on a copy of its seeds
# (build/fuzz/corpus/<harness>/, kept between runs, so later runs start where earlier ones
# stopped). Prints each harness's executions, seconds and verdict; exits 1 on any finding,
# whose input is kept in build/fuzz/findings/<harness>/.
#   scripts/fuzz.sh [SECONDS] [HARNESS ...]          SECONDS per harness (default 60)
#   scripts/fuzz.sh --total SECONDS [HARNESS ...]    all of them in about SECONDS (CI: 90)
# HARNESS names as in fuzz/corpus/ (default: all). Replay a finding:
#   build/fuzz/fuzz/<harness>_fuzz build/fuzz/findings/<harness>/<file>
set -euo pipefail
cd "$(dirname "$0")/.."

per_harness=60
total=""
case "${1:-}" in
  --total) total="$2"; shift 2 ;;
  [0-9]*) per_harness="$1"; shift ;;
esac
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  for dir in fuzz/corpus/*/; do harnesses+=("$(basename "$dir")"); done
fi
if [ -n "$total" ]; then
  per_harness=$(( total / ${#harnesses[@]} ))
  [ "$per_harness" -ge 1 ] || per_harness=1
fi

./scripts/install-deps.sh fuzz
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

# Readers write their input to files: on tmpfs that costs little (a run on disk is ~20x slower).
scratch_root=/tmp
if [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch_root=/dev/shm; fi
scratch=$(mktemp -d "$scratch_root/lmforge-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# Stack traces with function names and lines, where LLVM's symbolizer is installed.
if [ -x /usr/lib/llvm-19/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-19/bin/llvm-symbolizer
fi

# The dictionary of tokens libFuzzer splices into a harness's inputs (fuzz/dict/), if any.
dict_of() {
  case "$1" in
    config) echo "-dict=fuzz/dict/toml.dict" ;;
    checkpoint_*|gpt2_files|hf_config|jsonl|safetensors|tokenizer_json) echo "-dict=fuzz/dict/json.dict" ;;
  esac
}

# The verdict from a harness's log: empty if it found nothing.
finding_of() {
  local log="$1" rc="$2"
  [ "$rc" -eq 0 ] && return 0
  grep -m1 -oE "FINDING: .*|ERROR: libFuzzer: [a-z -]+|ERROR: AddressSanitizer: [a-z-]+|runtime error: .*" "$log" \
    || echo "exit status $rc"
}

found=0
start=$SECONDS
for h in "${harnesses[@]}"; do
  binary="build/fuzz/fuzz/${h}_fuzz"
  [ -x "$binary" ] || { echo "fuzz: no harness $binary" >&2; exit 2; }
  corpus="build/fuzz/corpus/$h" findings="build/fuzz/findings/$h" log="build/fuzz/logs/$h.log"
  rm -rf "$findings"  # the last run's: a finding is fixed or found again
  mkdir -p "$corpus" "$findings" "$(dirname "$log")" "$scratch/$h"
  cp -n "fuzz/corpus/$h"/* "$corpus"/
  began=$SECONDS
  rc=0
  # One thread: no harness gains from OpenMP, and parallel regions would slow every input.
  OMP_NUM_THREADS=1 TMPDIR="$scratch/$h" "$binary" -max_total_time="$per_harness" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" $(dict_of "$h") "$corpus" >"$log" 2>&1 \
    || rc=$?
  runs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
  verdict=$(finding_of "$log" "$rc")
  printf "fuzz: %-18s %10s runs in %4d s   %s\n" "$h" "$runs" $(( SECONDS - began )) "${verdict:-ok}"
  if [ -n "$verdict" ]; then
    found=1
    ls "$findings" | sed "s|^|      input: $findings/|"
    echo "      log: $log"
  fi
done
echo "fuzz: ${#harnesses[@]} harnesses in $(( SECONDS - start )) s: $([ $found -eq 0 ] && echo "nothing found" || echo "FINDINGS")"
exit $found
