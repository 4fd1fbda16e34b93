#!/usr/bin/env bash
# Installs every Debian package lmforge's build, tests and benchmarks need; with `fuzz`, also
# clang and libFuzzer for the fuzz preset (scripts/fuzz.sh). Idempotent: packages already
# present are skipped, so a second run costs a dpkg query.
#   scripts/install-deps.sh [fuzz]
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libdnnl-dev
  libopenmpi-dev openmpi-bin
  libfmt-dev nlohmann-json3-dev libcli11-dev libtomlplusplus-dev
  libcurl4-openssl-dev zlib1g-dev ca-certificates
  libpcre2-dev
  libgtest-dev libbenchmark-dev
  # A single-node Slurm cluster for the tests: slurmctld, slurmd and the clients (srun, sbatch);
  # srun --mpi=pmix's plugin (slurm-wlm-basic-plugins; pmi2 is there too) loads libpmix.so.
  slurm-wlm slurm-wlm-basic-plugins libpmix-dev munge
  python3 python3-venv
)
if [ "${1:-}" = "fuzz" ]; then
  # clang 19: Debian 12's default clang 14 cannot compile lmforge (structured bindings
  # captured in lambdas); libclang-rt holds libFuzzer and the sanitizers, libomp its OpenMP,
  # llvm its symbolizer (function names in a finding's stack trace).
  packages+=(clang-19 libclang-rt-19-dev libomp-19-dev llvm-19)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
