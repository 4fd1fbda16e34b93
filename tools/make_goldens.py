#!/usr/bin/env python3
"""Writes the golden fixtures the C++ tests compare against (tests/fixtures/gpt2_*.safetensors).

For each config: the initial weights (Hugging Face names), a batch of inputs and targets, the
logits, the loss, every parameter's gradient, then the losses and gradient norms of 10 AdamW
steps with gradient clipping on that batch. Run from the project root:

    pip install torch==2.13.0 safetensors && python3 tools/make_goldens.py

Deterministic: fixed seeds and one thread, so the files only change when this script does.
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file

from gpt2_reference import Gpt2, adamw

CONFIGS = {
    # A small model with every size a power of two: the vocabulary needs no padding.
    "tiny": dict(n_layer=2, n_head=4, n_embd=32, vocab_size=64, block_size=16, B=4, T=16,
                 ignored=0),
    # Odd sizes: C=48 over 3 heads, T=13 < block_size, V=101 (padded to 128), and some targets
    # set to the ignore index -100.
    "odd": dict(n_layer=2, n_head=3, n_embd=48, vocab_size=101, block_size=16, B=3, T=13,
                ignored=5),
}
STEPS = 10
LR = 1e-3
WEIGHT_DECAY = 0.1
GRAD_CLIP = 1.0


def make(name, cfg, out_dir):
    torch.manual_seed(1234)
    model_cfg = {k: cfg[k] for k in ("n_layer", "n_head", "n_embd", "vocab_size", "block_size")}
    model = Gpt2(**model_cfg)
    B, T, V = cfg["B"], cfg["T"], cfg["vocab_size"]
    g = torch.Generator().manual_seed(99)
    inputs = torch.randint(0, V, (B, T), generator=g, dtype=torch.int32)
    targets = torch.randint(0, V, (B, T), generator=g, dtype=torch.int32)
    if cfg["ignored"]:
        flat = targets.view(-1)
        flat[torch.randperm(B * T, generator=g)[: cfg["ignored"]]] = -100

    tensors = {f"param/{k}": v.detach().clone() for k, v in model.named_parameters()}
    tensors["inputs"] = inputs
    tensors["targets"] = targets

    logits, loss = model(inputs.long(), targets.long())
    loss.backward()
    tensors["logits"] = logits.detach()
    tensors["loss"] = loss.detach().reshape(1)
    for k, p in model.named_parameters():
        tensors[f"grad/{k}"] = p.grad.detach().clone()

    # Steps: the loss before each update, and the gradient norm before clipping.
    opt = adamw(model, LR, WEIGHT_DECAY)
    losses, norms = [], []
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        _, loss = model(inputs.long(), targets.long())
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP).item())
        opt.step()
        losses.append(loss.item())
    tensors["step_losses"] = torch.tensor(losses, dtype=torch.float32)
    tensors["step_grad_norms"] = torch.tensor(norms, dtype=torch.float32)

    meta = dict(model_cfg, B=B, T=T, lr=LR, weight_decay=WEIGHT_DECAY, grad_clip=GRAD_CLIP,
                steps=STEPS, torch=torch.__version__)
    path = os.path.join(out_dir, f"gpt2_{name}.safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path,
              metadata={"config": json.dumps(meta)})
    print(f"{path}: loss {tensors['loss'].item():.6f}, step losses {losses[0]:.4f} -> {losses[-1]:.4f}, "
          f"grad norms {norms[0]:.3f} -> {norms[-1]:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    for name, cfg in CONFIGS.items():
        make(name, cfg, args.out)


if __name__ == "__main__":
    main()
