#!/usr/bin/env bash
# The test command: sets up a fresh machine (Debian and PyPI packages, build) and runs every
# test. Tests that need real data fetch it into the data home ($LMFORGE_HOME or ~/.cache/lmforge).
# The release build's whole run also tests its Debian package in a fresh Debian root
# (scripts/test-package.sh) and training under a single-node Slurm cluster it starts and stops
# (scripts/test-slurm.sh), both as root.
#   scripts/test.sh [release|debug|asan] [ctest arguments, e.g. -L unit]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="release"
case "${1:-}" in release|debug|asan) preset="$1"; shift ;; esac
./scripts/build.sh "$preset"
./scripts/install-python-deps.sh
ctest --preset "$preset" -j "$(nproc)" "$@"
if [ "$preset" = release ] && [ $# -eq 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    ./scripts/test-package.sh build/release
    ./scripts/test-slurm.sh build/release/lmforge
  else
    echo "test.sh: the package test (scripts/test-package.sh) needs root: not run" >&2
    echo "test.sh: the Slurm test (scripts/test-slurm.sh) needs root: not run" >&2
  fi
fi
