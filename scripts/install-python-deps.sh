#!/usr/bin/env bash
# Installs the PyPI packages the tests use (tools/requirements-test.txt), if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if python3 -c "import tensorboard, tokenizers, tiktoken" 2>/dev/null; then exit 0; fi
echo "install-python-deps: installing $(grep -v '^#' tools/requirements-test.txt | xargs)"
python3 -m pip install --quiet --disable-pip-version-check -r tools/requirements-test.txt
