#!/usr/bin/env bash
# The test command: sets up a fresh machine (packages, build) and runs every test.
#   scripts/test.sh [release|debug|asan] [ctest arguments, e.g. -L unit]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="release"
case "${1:-}" in release|debug|asan) preset="$1"; shift ;; esac
./scripts/build.sh "$preset"
ctest --preset "$preset" -j "$(nproc)" "$@"
