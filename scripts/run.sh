#!/usr/bin/env bash
# The main job, from a fresh machine: install packages, build, fetch Moby Dick and GPT-2's
# tokenizer, prepare the shards, then train configs/moby-small.toml for a 10-minute budget
# (as many steps as fit on this CPU), and print the untrained model's samples beside the
# trained one's, the validation perplexity against the unigram baseline, and where the plots
# are. Run again, it resumes (or reports the finished run); remove runs/moby-small to train
# afresh.
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
