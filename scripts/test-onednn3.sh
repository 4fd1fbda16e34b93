#!/usr/bin/env bash
# lmforge against oneDNN 3.x as well as Debian 12's 2.6: installs PyPI's onednn-devel (pinned in
# tools/requirements-onednn3.txt) into .venv-onednn3/, builds the onednn3 preset against it with
# the tests of every kernel, gradient and model (tests/unit, grad, golden: the e2e and mpi tiers
# run whole programs, whose oneDNN calls those tiers already make), and runs them. PyPI's oneDNN
# reaches the CPU through SYCL: its OpenCL CPU device is named by OCL_ICD_FILENAMES, and its
# libraries are found by LD_LIBRARY_PATH.
#   scripts/test-onednn3.sh [ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-onednn3
if [ ! -f "$venv/include/oneapi/dnnl/dnnl.hpp" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check -r tools/requirements-onednn3.txt
fi
./scripts/install-deps.sh
./scripts/install-python-deps.sh
# For the tests, and for the build, which lists each test program's tests by running it.
export LD_LIBRARY_PATH="$PWD/$venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OCL_ICD_FILENAMES="$PWD/$venv/lib/libintelocl.so"
# Its SYCL threads share the cores with lmforge's OpenMP ones, which must not spin
# (docs/performance.md, Which oneDNN).
export OMP_WAIT_POLICY=passive
cmake --preset onednn3 >/dev/null
cmake --build --preset onednn3 -j "$(nproc)"
build/onednn3/lmforge --version
ctest --preset onednn3 -j "$(nproc)" "$@"
