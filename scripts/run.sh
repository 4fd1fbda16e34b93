#!/usr/bin/env bash
# The main job, from a fresh machine: install packages, build, fetch Moby Dick and GPT-2's
# tokenizer, prepare the shards, then train configs/moby-small.toml (on 2 cores: about 3
# minutes in bf16 on a CPU with AVX512_BF16, 20 in fp32 on an AVX2-only one), print samples
# and where the plots are. Run again, it resumes (or reports the finished run); remove
# runs/moby-small to train afresh.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh release
lmforge=build/release/lmforge

"$lmforge" data get gpt2-tokenizer >/dev/null
book_dir=$("$lmforge" data get moby-dick)
if [ ! -f data/moby-dick/prepare.json ]; then
  "$lmforge" prepare --input "$book_dir/moby_dick.txt" --output data/moby-dick
fi
echo "== the data, and what a model that ignores context scores on it"
"$lmforge" data check data/moby-dick
echo
echo "== training (log: runs/moby-small/train.log)"
"$lmforge" train configs/moby-small.toml
echo
echo "TensorBoard: tensorboard --logdir runs/moby-small/tensorboard"
echo "More samples: $lmforge sample --checkpoint runs/moby-small/best --prompt \"Call me Ishmael.\""
