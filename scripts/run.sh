#!/usr/bin/env bash
# The main job. Until the training pipeline lands, it is the engine benchmark: sets up a fresh
# machine (packages, build), then times full GPT-2 training steps on random tokens with every
# core, for GPT-2 124M (B=4, T=64) and the mini config (6 layers, 6 heads, 384 wide, B=8, T=256).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh release
lmforge=build/release/lmforge
echo "== GPT-2 124M, B=4, T=64"
"$lmforge" bench --model gpt2 --batch 4 --seq 64 --steps 10
echo
echo "== mini: 6 layers, 6 heads, 384 wide, vocab 50257, B=8, T=256"
"$lmforge" bench --model gpt2 --layers 6 --heads 6 --embd 384 --batch 8 --seq 256 --steps 10
