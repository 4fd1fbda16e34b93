#!/usr/bin/env bash
# The chaos run (tools/chaos.py): training killed at random many times -- kill -9, a stop
# signal, a killed MPI rank, a full disk -- and resumed, on a fixed and on a varying number of
# processes, must end as an uninterrupted run ends. Not part of the test command: it takes
# minutes to hours by --cycles.
#   scripts/chaos.sh [--cycles N] [--steps N] [--seed N]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh release
exec python3 tools/chaos.py --lmforge build/release/lmforge "$@"
