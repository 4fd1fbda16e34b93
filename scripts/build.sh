#!/usr/bin/env bash
# Installs the Debian packages lmforge needs (if missing) and builds a CMake preset:
#   scripts/build.sh [release|debug|asan]      (default: release)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
./scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
