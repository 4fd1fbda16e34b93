#!/usr/bin/env bash
# Makes .venv/, a virtual environment of the project's own, with the PyPI packages the tests
# use (tools/requirements-test.txt, pinned). Never the system's Python: Debian 12 refuses
# pip there (PEP 668). Idempotent: with every package present, it installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python3 ]; then
  python3 -m venv .venv
fi
if .venv/bin/python3 -c "import tensorboard, tokenizers, tiktoken, torch, transformers, mlflow, peft" 2>/dev/null; then exit 0; fi
echo "install-python-deps: installing $(grep -v '^#' tools/requirements-test.txt | xargs) into .venv"
.venv/bin/python3 -m pip install --quiet --disable-pip-version-check -r tools/requirements-test.txt
